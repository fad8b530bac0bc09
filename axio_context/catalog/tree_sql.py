"""Sessions as a tree: subagent sessions under the session that owns them, forks under the
session they were forked from, as plans (:mod:`axio_context.sql`).

A session is placed under its owner when it has one (a subagent session), else under its fork
parent; a session whose owner and parent are both absent (none, or deleted) is a root. Roots
page newest first, as ``list-sessions`` does; the sessions under each come oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..expiry import now_ms
from ..sql import Dialect, Plan, Rows
from ..views import SessionNode, SessionSort, sort_column
from .expiry_sql import live_session

__all__ = ["descendants", "session_tree"]

#: A root: live, and its owner and parent are absent or expired (bind now three times).
_ROOT: Final = (
    f"{live_session('s')}"
    f" AND NOT EXISTS (SELECT 1 FROM sessions o WHERE o.id = s.owner_id AND {live_session('o')})"
    f" AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_id AND {live_session('p')})"
)


def _columns(d: Dialect) -> str:
    # SessionInfo's columns, then what places a row in the tree (read from the end of the row).
    return f"{d.info_columns}, owner_id, parent_id, agent_name"


def _under(d: Dialect, ids: Sequence[str]) -> Rows:
    """Rows of every live session below ``ids`` (not ``ids`` themselves), oldest first (an
    expired one is passed through, not shown: its forks head trees of their own). UNION (not
    UNION ALL) stops at a session already reached, so a cycle made by renames cannot loop."""
    listed = d.list_arg(ids)
    return Rows(
        f"WITH RECURSIVE d(id) AS ({d.each()}"
        " UNION SELECT s.id FROM sessions s JOIN d ON s.owner_id = d.id OR s.parent_id = d.id"
        f" WHERE {live_session('s')})"
        f" SELECT {_columns(d)} FROM sessions WHERE id IN (SELECT id FROM d)"
        f" AND NOT ({d.any_of('id')}) ORDER BY created_at, sid",
        (listed, now_ms(), listed),
    )


def session_tree(
    d: Dialect, project: str | None, limit: int | None, since_ms: int | None, sort: SessionSort
) -> Plan[list[SessionNode]]:
    """Root sessions newest first by ``sort`` (at most ``limit``; one project's when given), each
    with the subagent sessions and forks below it, at any depth."""
    order = sort_column(sort)
    now = now_ms()
    where, args = [_ROOT], list[Any]([now, now, now])
    if project is not None:
        where.append("project = ?")
        args.append(project)
    if since_ms is not None:
        where.append("created_at >= ?")
        args.append(since_ms)
    sql = f"SELECT {_columns(d)} FROM sessions s WHERE {' AND '.join(where)} ORDER BY {order} DESC, sid DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    roots = yield Rows(sql, args)
    below = yield _under(d, [r[0] for r in roots])
    nodes = {r[0]: SessionNode(d.info_of(r)) for r in roots}
    for r in below:
        nodes[r[0]] = SessionNode(d.info_of(r), agent_name=r[-1])
    for r in below:
        owner, parent = r[-3], r[-2]
        node = nodes[r[0]]
        if owner is not None and owner in nodes:
            node.kind = "subagent"
            nodes[owner].children.append(node)
        elif parent is not None and parent in nodes:
            node.kind = "fork"
            nodes[parent].children.append(node)
    return [nodes[r[0]] for r in roots]


def descendants(d: Dialect, ids: Sequence[str]) -> Plan[list[str]]:
    """The ids of every session below ``ids`` (subagent sessions and forks, at any depth),
    oldest first."""
    return [r[0] for r in (yield _under(d, ids))]
