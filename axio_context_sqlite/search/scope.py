"""What a search covers: one session's transcript (its lineage segments), the role and time
filters as SQL, and id lists handed to SQL as JSON."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from axio_context.errors import SessionNotFoundError

from ..store import session_rows
from .query import Query

__all__ = ["Scope", "ids_json", "message_filters", "session_scope"]


class Scope(msgspec.Struct):
    """A search within one session: its transcript's segments, and the rows the owners of those
    segments have outside them (which a vec0 ``sid IN (...)`` filter cannot exclude)."""

    session_id: str
    project: str | None
    preview: str | None
    title: str | None
    segments: list[tuple[int, int, int]]
    outside: int

    @property
    def sids(self) -> list[int]:
        return sorted({s for s, _, _ in self.segments})


def session_scope(c: Any, session_id: str) -> Scope:
    row = session_rows.session_row(c, session_id)
    if row is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    preview, title = c.execute("SELECT preview, title FROM sessions WHERE sid = ?", (row.sid,)).fetchone()
    segments = session_rows.segments(c, row)
    outside = 0
    for sid, lo, hi in segments:
        base_len, next_position = c.execute(
            "SELECT base_len, next_position FROM sessions WHERE sid = ?", (sid,)
        ).fetchone()
        outside += (next_position - base_len) - (hi - lo)
    return Scope(session_id, row.project, preview, title, segments, outside)


def message_filters(q: Query, prefix: str = "") -> tuple[list[str], list[Any]]:
    """The role and time filters as SQL conditions on ``{prefix}role`` and ``{prefix}created_at``."""
    where: list[str] = []
    args: list[Any] = []
    if q.role is not None:
        where.append(f"{prefix}role = ?")
        args.append(q.role)
    if q.since_ms is not None:
        where.append(f"{prefix}created_at >= ?")
        args.append(q.since_ms)
    return where, args


def ids_json(ids: Iterable[int]) -> str:
    return msgspec.json.encode(list(ids)).decode()
