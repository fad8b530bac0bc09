"""Sessions as a tree on PostgreSQL: subagent sessions under the session that owns them, forks
under the session they were forked from (as the SQLite backend places them).

A session is placed under its owner when it has one, else under its fork parent; a session
whose owner and parent are both absent (none, or deleted) is a root. Roots page newest first,
as ``list-sessions`` does; the sessions under each come oldest first.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

from axio_context.transcript.times import epoch_ms as ms
from axio_context.views import SessionNode, SessionSort, sort_column

from .connection import Pool, translated
from .listing import INFO_COLUMNS, info_of

__all__ = ["SessionNode", "descendants", "session_tree"]

_COLUMNS: Final = f"{INFO_COLUMNS}, owner_id, agent_name"
_ROOT: Final = (
    "NOT EXISTS (SELECT 1 FROM sessions o WHERE o.id = s.owner_id)"
    " AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_id)"
)
# Every session below the ids in $1 (owned or forked, at any depth), oldest first. UNION (not
# UNION ALL) stops at a session already reached, so a cycle made by renames cannot loop.
_UNDER: Final = f"""
WITH RECURSIVE d(id) AS (
    SELECT unnest($1::text[])
    UNION
    SELECT s.id FROM sessions s, d WHERE s.owner_id = d.id OR s.parent_id = d.id
)
SELECT {_COLUMNS} FROM sessions WHERE id IN (SELECT id FROM d) AND NOT id = ANY($1::text[])
ORDER BY created_at, sid
"""


async def _under(conn: Any, ids: list[str]) -> list[Any]:
    return list(await conn.fetch(_UNDER, ids))


async def session_tree(
    pool: Pool,
    project: str | None = None,
    *,
    limit: int | None = None,
    since: datetime | None = None,
    sort: SessionSort = "created",
) -> list[SessionNode]:
    """Root sessions newest first by ``sort`` (at most ``limit``; one project's when given),
    each with the subagent sessions and forks below it, at any depth."""
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    order = sort_column(sort)
    where, args = [_ROOT], list[Any]()
    if project is not None:
        args.append(project)
        where.append(f"project = ${len(args)}")
    since_ms = ms(since)
    if since_ms is not None:
        args.append(since_ms)
        where.append(f"created_at >= ${len(args)}")
    sql = f"SELECT {_COLUMNS} FROM sessions s WHERE {' AND '.join(where)} ORDER BY {order} DESC, sid DESC"
    if limit is not None:
        args.append(limit)
        sql += f" LIMIT ${len(args)}"
    async with (
        translated("the session tree"),
        pool.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        roots = await conn.fetch(sql, *args)
        below = await _under(conn, [r[0] for r in roots])
    nodes = {r[0]: SessionNode(info_of(r)) for r in roots}
    for r in below:
        nodes[r[0]] = SessionNode(info_of(r), agent_name=r["agent_name"])
    for r in below:
        owner, parent = r["owner_id"], r["parent_id"]
        node = nodes[r[0]]
        if owner is not None and owner in nodes:
            node.kind = "subagent"
            nodes[owner].children.append(node)
        elif parent is not None and parent in nodes:
            node.kind = "fork"
            nodes[parent].children.append(node)
    return [nodes[r[0]] for r in roots]


async def descendants(pool: Pool, session_ids: Iterable[str]) -> list[str]:
    """The ids of every session below ``session_ids`` in the tree (subagent sessions and forks,
    at any depth), oldest first."""
    async with (
        translated("the session tree"),
        pool.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        return [r[0] for r in await _under(conn, list(session_ids))]
