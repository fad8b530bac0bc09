"""Listing sessions: pages by creation or activity time (optionally one project's), one session's
info, forks."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import starmap
from typing import Any, Final

from axio_context.errors import SessionNotFoundError
from axio_context.messages import SessionInfo
from axio_context.views import SessionPage, SessionSort, sort_column

from . import runs

__all__ = [
    "INFO_COLUMNS",
    "SessionPage",
    "info_from_row",
    "list_forks",
    "list_sessions",
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
_INFO_FIELDS: Final = 11


def info_from_row(r: Sequence[Any]) -> SessionInfo:
    return SessionInfo(*r[:_INFO_FIELDS])


_ALL: Final = object()


def list_sessions(
    c: Any,
    project: Any = _ALL,
    *,
    limit: int | None = None,
    cursor: str | None = None,
    since_ms: int | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    sort: SessionSort = "created",
) -> SessionPage:
    """Sessions newest first (by creation, or with ``sort="updated"`` by last activity),
    optionally one project's, in keyset-paginated pages; ``agent_id`` / ``run_id`` keep one
    agent's sessions / those holding one run's messages."""
    order = sort_column(sort)
    where, args = runs.run_filter(agent_id, run_id)
    if project is not _ALL:
        if project is None:
            where.append("project IS NULL")
        else:
            where.append("project = ?")
            args.append(project)
    if since_ms is not None:
        where.append("created_at >= ?")
        args.append(since_ms)
    if cursor is not None:
        created, sid = _parse_cursor(cursor)
        where.append(f"({order} < ? OR ({order} = ? AND sid < ?))")
        args += [created, created, sid]
    # A page also reads the cursor's columns, after SessionInfo's.
    sql = f"SELECT {INFO_COLUMNS}{'' if limit is None else f', {order}, sid'} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY {order} DESC, sid DESC"
    if limit is None:
        return SessionPage(sessions=list(starmap(SessionInfo, c.execute(sql, args))), next_cursor=None)
    if limit < 1:
        raise ValueError("limit must be at least 1")
    sql += " LIMIT ?"
    args.append(limit + 1)
    rows = c.execute(sql, args).fetchall()
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = f"{rows[-1][_INFO_FIELDS]}.{rows[-1][_INFO_FIELDS + 1]}"
    return SessionPage(sessions=[info_from_row(r) for r in rows], next_cursor=next_cursor)


def _parse_cursor(cursor: str) -> tuple[int, int]:
    try:
        created, sid = cursor.split(".")
        return int(created), int(sid)
    except ValueError:
        raise ValueError(f"not a session-listing cursor: {cursor!r}") from None


def session_info(c: Any, session_id: str) -> SessionInfo:
    r = c.execute(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if r is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return info_from_row(r)


def list_forks(c: Any, session_id: str) -> list[SessionInfo]:
    """The sessions forked from ``session_id``, oldest first."""
    rows = c.execute(
        f"SELECT {INFO_COLUMNS} FROM sessions WHERE parent_id = ? ORDER BY created_at, sid", (session_id,)
    ).fetchall()
    return [info_from_row(r) for r in rows]


def session_info_or_none(c: Any, session_id: str) -> SessionInfo | None:
    r = c.execute(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if r is None else info_from_row(r)
