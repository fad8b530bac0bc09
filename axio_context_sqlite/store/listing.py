"""Listing sessions: pages by creation or activity time (optionally one project's), one session's
info, forks."""

from __future__ import annotations

from typing import Any, Final

from axio_context.catalog.expiry_sql import live_session
from axio_context.errors import SessionNotFoundError
from axio_context.expiry import now_ms
from axio_context.messages import SESSION_INFO_FIELDS, SessionInfo, session_info_of
from axio_context.views import SessionPage

__all__ = [
    "INFO_COLUMNS",
    "INFO_FIELDS",
    "SessionPage",
    "info_from_row",
    "list_forks",
    "session_info",
    "session_info_or_none",
]


# The times come formatted from the sessions table's generated columns (schema version 3):
# formatting them per row, even in SQL, was over half the cost of a listing. The columns are
# SessionInfo's fields in order, so a row is its positional arguments, and a whole listing is
# built straight from the cursor (bench.run's list of 2,000: 8.3-8.9 ms before, 5.9-8.4 after).
INFO_COLUMNS: Final = (
    "id, next_position - hidden_count, coalesce(nullif(preview, ''), '(empty)'), created_iso, input_tokens,"
    " output_tokens, project, updated_iso, parent_id, fork_position, title"
)
#: How many columns :data:`INFO_COLUMNS` reads.
INFO_FIELDS: Final = SESSION_INFO_FIELDS
info_from_row: Final = session_info_of


def session_info(c: Any, session_id: str) -> SessionInfo:
    r = c.execute(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if r is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return info_from_row(r)


def list_forks(c: Any, session_id: str) -> list[SessionInfo]:
    """The sessions forked from ``session_id``, oldest first."""
    rows = c.execute(
        f"SELECT {INFO_COLUMNS} FROM sessions WHERE parent_id = ? AND {live_session()}"
        " ORDER BY created_at, sid",
        (session_id, now_ms()),
    ).fetchall()
    return [info_from_row(r) for r in rows]


def session_info_or_none(c: Any, session_id: str) -> SessionInfo | None:
    r = c.execute(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if r is None else info_from_row(r)
