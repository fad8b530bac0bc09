"""How a session's :class:`SessionInfo` is read from PostgreSQL's ``sessions`` table (the times
kept as epoch milliseconds, formatted as they are read)."""

from __future__ import annotations

from typing import Any, Final

from axio_context.messages import SessionInfo
from axio_context.transcript import format_time

__all__ = ["INFO_COLUMNS", "info_of"]

#: The columns of a SessionInfo, in its field order, then the listing cursor's.
INFO_COLUMNS: Final = (
    "id, next_position - hidden_count, COALESCE(NULLIF(preview, ''), '(empty)'), created_at, input_tokens,"
    " output_tokens, project, updated_at, parent_id, fork_position, title, sid"
)


def info_of(r: Any) -> SessionInfo:
    """A SessionInfo from a row of :data:`INFO_COLUMNS`."""
    return SessionInfo(
        session_id=r[0],
        message_count=r[1],
        preview=r[2],
        created_at=format_time(r[3]),
        input_tokens=r[4],
        output_tokens=r[5],
        project=r[6],
        updated_at=format_time(r[7]),
        parent_id=r[8],
        fork_position=r[9],
        title=r[10],
    )
