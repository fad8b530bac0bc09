"""How people name sessions and projects, the same on every backend: the short prefix a table
shows for a long random id (typing it back finds that session), and what a typed project path
may be stored as."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Final

__all__ = ["RANDOM_ID", "SHORT_ID", "project_forms", "shared_prefix", "unique_prefix"]

#: A long random id (a uuid, as ``fork`` makes) is shown cut to a prefix at least this long.
SHORT_ID: Final = 12

#: What a long random id looks like (a uuid4 hex, or with dashes): only these are shortened.
RANDOM_ID: Final = re.compile(r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` have in common."""
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def unique_prefix(i: str, others: Iterable[str]) -> str:
    """``i`` cut to the shortest prefix of at least :data:`SHORT_ID` characters none of
    ``others`` starts with (``i`` whole when it is a prefix of one of them)."""
    n = SHORT_ID
    for o in others:
        if o != i:
            n = max(n, shared_prefix(i, o) + 1)
    return i[: min(n, len(i))]


def project_forms(project: str) -> list[str]:
    """What a project value may name: itself, and for a path (starting with ``.``, ``/`` or
    ``~``) its absolute form (``~`` expanded, ``.`` and a trailing ``/`` gone), then with symlinks
    resolved (as ``--here`` and the store's default project are)."""
    forms = [project]
    if project.startswith((".", "/", "~")):
        expanded = os.path.expanduser(project)
        for form in (os.path.abspath(expanded), os.path.realpath(expanded)):
            if form not in forms:
                forms.append(form)
    return forms
