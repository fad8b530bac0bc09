"""Sessions as a tree: subagent sessions under the session that owns them, forks under the
session they were forked from.

A session is placed under its owner when it has one (a subagent session), else under its fork
parent; a session whose owner and parent are both absent (none, or deleted) is a root. Roots
page newest first, as ``list-sessions`` does; the sessions under each come oldest first.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

import aiosqlite
import msgspec

from axio_context.views import SessionNode, SessionSort, sort_column

from ..admin.jobs import ms
from ..store.calls import run
from ..store.listing import INFO_COLUMNS, info_from_row
from ..store.transactions import read_tx

__all__ = ["SessionNode", "descendants", "session_tree"]

_COLUMNS: Final = f"{INFO_COLUMNS}, owner_id, agent_name"
_ROOT: Final = (
    "NOT EXISTS (SELECT 1 FROM sessions o WHERE o.id = s.owner_id)"
    " AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_id)"
)
_UNDER: Final = (
    "WITH RECURSIVE d(id) AS (SELECT value FROM json_each(?)"
    " UNION SELECT s.id FROM sessions s JOIN d ON s.owner_id = d.id"
    " UNION SELECT s.id FROM sessions s JOIN d ON s.parent_id = d.id)"
)


def _under(c: Any, ids: list[str]) -> list[Any]:
    """Rows of every session below ``ids`` (not ``ids`` themselves), oldest first."""
    return list(
        c.execute(
            f"{_UNDER} SELECT {_COLUMNS} FROM sessions WHERE id IN (SELECT id FROM d)"
            " AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY created_at, sid",
            (msgspec.json.encode(ids).decode(),) * 2,
        )
    )


def _tree(
    c: Any, project: str | None, limit: int | None, since_ms: int | None, sort: SessionSort
) -> list[SessionNode]:
    order = sort_column(sort)
    where, args = [_ROOT], list[Any]()
    if project is not None:
        where.append("project = ?")
        args.append(project)
    if since_ms is not None:
        where.append("created_at >= ?")
        args.append(since_ms)
    sql = f"SELECT {_COLUMNS} FROM sessions s WHERE {' AND '.join(where)} ORDER BY {order} DESC, sid DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    with read_tx(c):
        roots = c.execute(sql, args).fetchall()
        below = _under(c, [r[0] for r in roots])
    nodes = {r[0]: SessionNode(info_from_row(r)) for r in roots}
    for r in below:
        nodes[r[0]] = SessionNode(info_from_row(r), agent_name=r[-1])
    for r in below:
        owner, parent = r[-2], r[8]  # owner_id; parent_id (INFO_COLUMNS' ninth)
        node = nodes[r[0]]
        if owner is not None and owner in nodes:
            node.kind = "subagent"
            nodes[owner].children.append(node)
        elif parent is not None and parent in nodes:
            node.kind = "fork"
            nodes[parent].children.append(node)
    return [nodes[r[0]] for r in roots]


async def session_tree(
    conn: aiosqlite.Connection,
    project: str | None = None,
    *,
    limit: int | None = None,
    since: datetime | None = None,
    sort: SessionSort = "created",
) -> list[SessionNode]:
    """Root sessions newest first by ``sort`` (at most ``limit``; one project's when given), each
    with the subagent sessions and forks below it, at any depth."""
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    return await run(conn, _tree, project, limit, ms(since), sort)


def _descendants(c: Any, ids: list[str]) -> list[str]:
    with read_tx(c):
        return [r[0] for r in _under(c, ids)]


async def descendants(conn: aiosqlite.Connection, session_ids: Iterable[str]) -> list[str]:
    """The ids of every session below ``session_ids`` in the tree (subagent sessions and forks,
    at any depth), oldest first; for exporting a session with its children."""
    return await run(conn, _descendants, list(session_ids))
