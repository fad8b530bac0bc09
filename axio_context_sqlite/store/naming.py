"""How people name sessions and projects: the short id prefix a table shows for a long random id
(typing it back finds that session), and the stored project a typed path means.

Synchronous, on a connection's worker thread, like the rest of admin: each call is one thread
hop, however many queries it makes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from axio_context.naming import RANDOM_ID, SHORT_ID, project_forms, shared_prefix, unique_prefix

from .catalog import ids_with_prefix

__all__ = ["SHORT_ID", "project_forms", "short_ids", "stored_project", "unique_prefix"]

#: Beyond this many random ids to shorten, every session id is read at once (one query) and the
#: prefixes are worked out here; for fewer, a prefix query or two per id reads less.
_FETCH_ALL_IDS: Final = 32

#: More than any database holds: "every id" for :func:`.sessions.ids_with_prefix`.
_ALL: Final = 2**62


def short_ids(c: Any, ids: Iterable[str | None]) -> dict[str, str]:
    """How each id appears in a table: in full, except a long random id, cut to the shortest
    prefix (at least :data:`SHORT_ID` characters) no other session id starts with, so typing
    back what the table shows always finds that session. ``None`` entries are skipped."""
    wanted = list(dict.fromkeys(i for i in ids if i is not None))
    shown = {i: i for i in wanted}
    random = sorted(i for i in wanted if RANDOM_ID.fullmatch(i))
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
            n = max(n + 1, shared_prefix(i, others[0]) + 1)
        shown[i] = i[:n]
    return shown


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
