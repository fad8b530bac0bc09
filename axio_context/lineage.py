"""Lineage cycles: a session above itself through its parents and owners.

A session hangs under its owner (a subagent's) or its fork parent. A session that is its own
ancestor (its ``parent_id`` its own id, two sessions each other's parent, its ``owner_id`` its own
id) belongs to no tree: it would vanish from ``list-sessions --tree`` and ``browse``. Import and
fork refuse to make one (:class:`LineageCycleError`, nothing written); ``check`` finds one
already stored. Written once: :func:`cycles` over links in memory, :func:`would_cycle` as a plan
run by either backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from .errors import AxioContextError
from .sql.plan import Plan, Value

__all__ = ["LineageCycleError", "cycle_through", "cycles", "describe", "shared_rows", "would_cycle"]


class LineageCycleError(AxioContextError, ValueError):
    """A fork or import would make a session its own ancestor (through parents or owners)."""


Links = Mapping[str, Iterable[str | None]]


def cycle_through(links: Links, start: str) -> list[str] | None:
    """The sessions of a cycle ``start`` is on (``start`` first), following each session's
    links (its parent and owner ids) in ``links``; None when ``start`` is on none."""
    path: list[str] = [start]
    seen: set[str] = {start}
    stack: list[tuple[str, list[str | None]]] = [(start, list(links.get(start, ())))]
    while stack:
        _, todo = stack[-1]
        if not todo:
            stack.pop()
            path.pop()
            continue
        nxt = todo.pop()
        if nxt is None:
            continue
        if nxt == start:
            return list(path)
        if nxt in seen:
            continue
        seen.add(nxt)
        path.append(nxt)
        stack.append((nxt, list(links.get(nxt, ()))))
    return None


def cycles(links: Links) -> list[list[str]]:
    """Every cycle among ``links`` (each once, as the ids on it in link order)."""
    found: list[list[str]] = []
    on_one: set[str] = set()
    for sid in links:
        if sid in on_one:
            continue
        cycle = cycle_through(links, sid)
        if cycle is not None:
            found.append(cycle)
            on_one.update(cycle)
    return found


def describe(cycle: list[str]) -> str:
    """A cycle for people: ``'a' -> 'b' -> 'a'``."""
    return " -> ".join(repr(i) for i in [*cycle, cycle[0]])


#: Whether the session ``?`` (second) is reached going up from ``?`` (first) through parents and
#: owners: UNION keeps each id once, so a stored cycle cannot loop the query.
_ABOVE: Final = """
WITH RECURSIVE up(id) AS (
    SELECT CAST(? AS TEXT)
    UNION
    SELECT CASE k.n WHEN 1 THEN s.parent_id ELSE s.owner_id END
    FROM up JOIN sessions s ON s.id = up.id CROSS JOIN (SELECT 1 AS n UNION ALL SELECT 2 AS n) k
    WHERE CASE k.n WHEN 1 THEN s.parent_id ELSE s.owner_id END IS NOT NULL
)
SELECT 1 FROM up WHERE id = CAST(? AS TEXT) LIMIT 1
"""


def would_cycle(session_id: str, new_id: str) -> Plan[None]:
    """Refuse (LineageCycleError) a session ``new_id`` under ``session_id`` when ``new_id`` is
    already above it: a stored session still names ``new_id`` as its parent or owner."""
    if session_id == new_id or (yield Value(_ABOVE, (session_id, new_id))) is not None:
        raise LineageCycleError(
            f"a fork {new_id!r} of {session_id!r} would be its own ancestor"
            f" ({session_id!r} descends from an id {new_id!r}); choose another id"
        )


def shared_rows(a: Sequence[tuple[int, int, int]], b: Sequence[tuple[int, int, int]]) -> int:
    """How many leading positions two transcripts have in the very same stored rows, given each
    as its ``(segment, lo, hi)`` ranges in position order (a fork shares its parent's prefix)."""
    shared = i = j = 0
    while i < len(a) and j < len(b):
        if a[i][0] != b[j][0] or a[i][1] != b[j][1]:
            break
        end = min(a[i][2], b[j][2])
        shared = end
        if a[i][2] == end:
            i += 1
        if b[j][2] == end:
            j += 1
    return shared
