"""A session's row: the lineage fields every read and write starts from, and the read snapshot.

Layout (see schema.sql): a message's key is ``(sid << 32) | position`` (:mod:`.keys`), so a
session's own rows are one contiguous range of the table's b-tree. A fork is a new session row
whose ``base_sid`` / ``base_len`` say "positions [0, base_len) are that session's"; nothing is
copied. Reading a session walks that chain (one indexed row per ancestor, :func:`segments`) and
reads one range per segment.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from axio_context.errors import CorruptDataError

__all__ = [
    "ROW_COLUMNS",
    "SessionRow",
    "create_session",
    "ensure_session",
    "segments",
    "session_row",
]


class SessionRow(msgspec.Struct):
    """The fields of a session row that reads and writes need: its key and its lineage."""

    sid: int
    base_sid: int | None
    base_len: int
    next_position: int
    est_tokens: int
    project: str | None


#: The sessions columns of :class:`SessionRow`, in its field order.
ROW_COLUMNS: Final = "sid, base_sid, base_len, next_position, est_tokens, project"
_ROW_SQL: Final = f"SELECT {ROW_COLUMNS} FROM sessions WHERE id = ?"


def session_row(c: Any, session_id: str) -> SessionRow | None:
    r = c.execute(_ROW_SQL, (session_id,)).fetchone()
    return None if r is None else SessionRow(*r)


def create_session(c: Any, session_id: str, project: str | None, now: int) -> None:
    c.execute(
        "INSERT OR IGNORE INTO sessions (id, project, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (session_id, project, now, now),
    )


def ensure_session(c: Any, session_id: str, project: str | None, now: int) -> SessionRow:
    row = session_row(c, session_id)
    if row is None:
        create_session(c, session_id, project, now)
        row = session_row(c, session_id)
        assert row is not None
    return row


def segments(c: Any, row: SessionRow, start: int = 0, end: int | None = None) -> list[tuple[int, int, int]]:
    """``(sid, lo, hi)`` ranges, oldest first, that make up positions ``[start, end)``."""
    hi = row.next_position if end is None else min(end, row.next_position)
    out: list[tuple[int, int, int]] = []
    sid, base_sid, lo = row.sid, row.base_sid, row.base_len
    while True:
        a = max(lo, start)
        if hi > a:
            out.append((sid, a, hi))
        hi = min(hi, lo)
        if base_sid is None or hi <= start:
            break
        r = c.execute("SELECT base_sid, base_len FROM sessions WHERE sid = ?", (base_sid,)).fetchone()
        if r is None:  # defensive: a dangling base would be a bug; surface it
            raise CorruptDataError(f"session {row.sid}: lineage points at a missing session")
        sid, (base_sid, lo) = base_sid, r
    out.reverse()
    return out
