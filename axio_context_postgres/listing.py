"""Session listings on PostgreSQL: :class:`SessionInfo` rows, newest first (by creation or by
last activity), in keyset pages (``time, sid`` as the SQLite backend's cursor), read from
``sessions`` alone."""

from __future__ import annotations

from typing import Any, Final

from axio_context.views import SessionPage, SessionSort, sort_column

from .info import INFO_COLUMNS, info_of

__all__ = ["INFO_COLUMNS", "SessionPage", "info_of", "list_page"]


def _parse_cursor(cursor: str) -> tuple[int, int]:
    try:
        created, sid = cursor.split(".")
        return int(created), int(sid)
    except ValueError:
        raise ValueError(f"not a session-listing cursor: {cursor!r}") from None


_ALL: Final = object()


async def list_page(
    conn: Any,
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
    optionally one project's, a keyset page at a time; ``agent_id`` / ``run_id`` keep one
    agent's sessions / those holding one run's messages."""
    from .runs import run_filter

    order = sort_column(sort)
    args: list[Any] = []
    where = run_filter(args, agent_id, run_id)
    if project is not _ALL:
        if project is None:
            where.append("project IS NULL")
        else:
            args.append(project)
            where.append(f"project = ${len(args)}")
    if since_ms is not None:
        args.append(since_ms)
        where.append(f"created_at >= ${len(args)}")
    if cursor is not None:
        created, sid = _parse_cursor(cursor)
        args += [created, sid]
        a, b = len(args) - 1, len(args)
        where.append(f"({order}, sid) < (${a}::bigint, ${b}::bigint)")
    sql = f"SELECT {INFO_COLUMNS}, {order} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY {order} DESC, sid DESC"
    if limit is not None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        args.append(limit + 1)
        sql += f" LIMIT ${len(args)}"
    rows = await conn.fetch(sql, *args)
    next_cursor = None
    if limit is not None and len(rows) > limit:
        rows = rows[:limit]
        next_cursor = f"{rows[-1][12]}.{rows[-1][11]}"
    return SessionPage(sessions=[info_of(r) for r in rows], next_cursor=next_cursor)
