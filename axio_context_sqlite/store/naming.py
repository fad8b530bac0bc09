"""How people name sessions and projects: the short id prefix a table shows for a long random id
(typing it back finds that session), and the stored project a typed path means.

Synchronous, on a connection's worker thread, like the rest of admin: each call is one thread
hop, however many queries it makes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any, Final

from .catalog import ids_with_prefix

__all__ = ["SHORT_ID", "project_forms", "short_ids", "stored_project", "unique_prefix"]

#: A long random id (a uuid, as ``fork`` makes) is shown cut to a prefix at least this long.
SHORT_ID: Final = 12

_RANDOM_ID: Final = re.compile(r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

#: Beyond this many random ids to shorten, every session id is read at once (one query) and the
#: prefixes are worked out here; for fewer, a prefix query or two per id reads less.
_FETCH_ALL_IDS: Final = 32

#: More than any database holds: "every id" for :func:`.sessions.ids_with_prefix`.
_ALL: Final = 2**62


def _shared(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` have in common."""
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def unique_prefix(i: str, others: Iterable[str]) -> str:
    """``i`` cut to the shortest prefix of at least :data:`SHORT_ID` characters none of
    ``others`` starts with (``i`` whole when it is a prefix of one of them)."""
    n = SHORT_ID
    for o in others:
        if o != i:
            n = max(n, _shared(i, o) + 1)
    return i[: min(n, len(i))]


def short_ids(c: Any, ids: Iterable[str | None]) -> dict[str, str]:
    """How each id appears in a table: in full, except a long random id, cut to the shortest
    prefix (at least :data:`SHORT_ID` characters) no other session id starts with, so typing
    back what the table shows always finds that session. ``None`` entries are skipped."""
    wanted = list(dict.fromkeys(i for i in ids if i is not None))
    shown = {i: i for i in wanted}
    random = sorted(i for i in wanted if _RANDOM_ID.fullmatch(i))
    if len(random) > _FETCH_ALL_IDS:
        # In sorted order, the id sharing the longest prefix with another is next to it.
        every = sorted({*ids_with_prefix(c, "", _ALL), *random})
        at = {i: k for k, i in enumerate(every)}
        for i in random:
            k = at[i]
            shown[i] = unique_prefix(i, every[max(k - 1, 0) : k + 2])
        return shown
    for i in random:
        n = SHORT_ID
        while n < len(i):
            others = [o for o in ids_with_prefix(c, i[:n], 2) if o != i]
            if not others:
                break
            n = max(n + 1, _shared(i, others[0]) + 1)
        shown[i] = i[:n]
    return shown


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


def stored_project(c: Any, project: str | None) -> str | None:
    """The project as stored that ``project`` names: the first of its forms any session is filed
    under (the value as typed first, so a label or an exact path always matches itself)."""
    if project is None:
        return None
    forms = project_forms(project)
    for form in forms if len(forms) > 1 else ():
        if c.execute("SELECT 1 FROM sessions WHERE project = ? LIMIT 1", (form,)).fetchone():
            return form
    return project
