"""What a live browser of the database reads: sessions as a tree one page at a time, a window of
one transcript, and a cheap "did anything change" check.

A browser opened on 10,000 sessions must show the first screen at once and never read every
transcript: :func:`session_tree` pages through the sessions that head a tree (newest first, by
the ``sessions_by_created`` index, like a listing) and brings each page's forks along, under
their parent. A transcript is read as a window of positions (:func:`transcript`), so a session
of 100,000 messages opens as fast as a short one. :func:`data_version` is SQLite's
``PRAGMA data_version``: it changes when another connection commits, so a follower re-reads a
session only after someone wrote to the file.

Every function is synchronous and runs on the connection's worker thread.
"""

from __future__ import annotations

from typing import Any

from axio_context.catalog.browse_sql import page_limit
from axio_context.transcript import MessageRecord
from axio_context.views import MAX_DEPTH, MAX_PAGE, SessionTreePage, TreeRow

from . import hiding, transactions
from .catalog import SessionView, full_row, records, session_header

__all__ = [
    "MAX_DEPTH",
    "MAX_PAGE",
    "SessionTreePage",
    "TreeRow",
    "data_version",
    "message_window",
    "transcript",
]


def data_version(c: Any) -> int:
    """SQLite's ``PRAGMA data_version``: a number that changes when another connection commits."""
    return int(c.execute("PRAGMA data_version").fetchone()[0])


def transcript(c: Any, session_id: str, full: bool, limit: int) -> SessionView:
    """The last ``limit`` messages of a session's model view (or with ``full`` of every message).

    ``start`` is the first position read; in the model view ``summary`` is the latest
    checkpoint's summary even when the window starts after its position.
    """
    limit = page_limit(limit)
    with transactions.read_tx(c):
        s = full_row(c, session_id)
        header = session_header(c, s, 0)
        summary = None
        first = 0
        if not full and header.checkpoints:
            latest = header.checkpoints[-1]
            summary, first = latest.summary, latest.position
        start = max(first, s.next_position - limit)
        view = records(c, s, start, s.next_position)
        return SessionView(header, summary, start, view, hidden=hiding.hidden_count(c, s.sid))


def message_window(c: Any, session_id: str, start: int, end: int | None) -> tuple[int, list[MessageRecord]]:
    """The session's message count and its messages at positions ``[start, end)`` (to the end
    when ``end`` is None), in one snapshot: what a follower reads after a change."""
    if start < 0:
        raise ValueError(f"start must be >= 0, not {start}")
    with transactions.read_tx(c):
        s = full_row(c, session_id)
        stop = s.next_position if end is None else min(end, s.next_position)
        if stop - start > MAX_PAGE:
            stop = start + MAX_PAGE
        return s.next_position, records(c, s, start, stop) if start < stop else []
