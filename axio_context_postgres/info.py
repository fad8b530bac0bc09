"""How a session's :class:`SessionInfo` is read from PostgreSQL's ``sessions`` table (the times
kept as epoch milliseconds, formatted as they are read)."""

from __future__ import annotations

from typing import Any, Final

from axio_context.messages import SessionInfo, session_info_of

__all__ = ["INFO_COLUMNS", "RUN_SESSIONS", "info_of", "iso_time"]


def iso_time(column: str) -> str:
    """The text :func:`~axio_context.transcript.format_time` writes for ``column`` (epoch
    milliseconds), made by the server: exact (whole seconds, then the milliseconds, each an
    integer times an interval) and without the session's time zone. A listing formats two times
    a session; in Python that was half a page of 50's time."""
    return (
        f"to_char(timestamp '1970-01-01' + ({column} / 1000) * interval '1 second'"
        f" + ({column} % 1000) * interval '1 millisecond', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"+00:00\"')"
    )


#: The columns of a SessionInfo, in its field order (the times as text), then the sid.
INFO_COLUMNS: Final = (
    "id, next_position - hidden_count, COALESCE(NULLIF(preview, ''), '(empty)'),"
    f" {iso_time('created_at')}, input_tokens, output_tokens, project, {iso_time('updated_at')},"
    " parent_id, fork_position, title, sid"
)


def info_of(r: Any) -> SessionInfo:
    """A SessionInfo from a row of :data:`INFO_COLUMNS` (in its field order)."""
    return session_info_of(r)


#: The agent sessions of a run's thread that own a message of the run, by run id.
RUN_SESSIONS: Final = (
    "SELECT a.sid FROM agent_sessions a JOIN agent_runs r ON r.run_id = ? AND a.thread_id = r.thread_id"
    " JOIN sessions o ON o.sid = a.sid WHERE EXISTS (SELECT 1 FROM message_runs m"
    " JOIN segments g ON g.seg = m.seg WHERE m.run = r.id AND g.owner = o.id)"
)
