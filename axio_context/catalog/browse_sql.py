"""What a live browser pages through, as plans: sessions as a tree one page at a time.

A browser opened on 10,000 sessions must show the first screen at once and never read every
transcript: :func:`session_tree` pages through the sessions that head a tree (newest first, by
the time index, like a listing) and brings each page's forks along, under their parent, in one
recursive query for the whole page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..expiry import now_ms
from ..messages import SessionInfo
from ..sql import Dialect, Plan, Rows
from ..views import MAX_DEPTH, MAX_PAGE, SessionSort, SessionTreePage, TreeRow, sort_column
from .expiry_sql import live_session
from .listing_sql import parse_cursor

__all__ = ["page_limit", "session_tree"]

#: The columns ``text`` is looked for in.
_SEARCHED = ("id", "title", "preview", "project")


def page_limit(limit: int) -> int:
    """``limit`` when it is a whole number of rows a page may hold; ValueError naming it if not."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, not {limit!r}")
    return limit


def session_tree(
    d: Dialect,
    project: str | None,
    text: str | None,
    limit: int,
    cursor: str | None,
    agent_id: str | None = None,
    sort: SessionSort = "created",
) -> Plan[SessionTreePage]:
    """Heads newest first (by ``sort``: creation or last activity), each followed by its forks
    (newest first, at any depth).

    A head is a session whose parent is gone or, with ``project``, filed elsewhere. ``text``
    (matched case-insensitively in id, title, preview and project) lists the matching sessions
    flat instead, newest first, a fork with its ``parent_id`` to say whose it is; so does
    ``agent_id``, keeping the sessions that hold that agent's conversations.
    """
    limit = page_limit(limit)
    order = sort_column(sort)
    now = now_ms()  # expired sessions are left out (and a fork of one heads its own tree)
    where: list[str] = [live_session("s")]
    args: list[Any] = [now]
    if project is not None:
        where.append("s.project = ?")
        args.append(project)
    if agent_id is not None:
        where.append("s.sid IN (SELECT a.sid FROM agent_sessions a WHERE a.agent_id = ?)")
        args.append(agent_id)
    flat = bool(text) or agent_id is not None
    if text:
        found = [d.contains(f"s.{column}") for column in _SEARCHED]
        where.append("(" + " OR ".join(found) + ")")
        args += [d.contains_arg(text)] * len(found)
    if not flat:
        where.append(
            f"NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_id AND {live_session('p')}"
            f"{' AND p.project = ?' if project is not None else ''})"
        )
        args.append(now)
        if project is not None:
            args.append(project)
    if cursor is not None:
        clause, values = d.before_key(f"s.{order}", *parse_cursor(cursor, "session-tree"))
        where.append(clause)
        args += values
    heads = yield Rows(
        f"SELECT {d.info_columns}, s.{order}, s.sid FROM sessions s WHERE {' AND '.join(where) or '1 = 1'}"
        f" ORDER BY s.{order} DESC, s.sid DESC LIMIT ?",
        [*args, limit + 1],
    )
    next_cursor = None
    if len(heads) > limit:
        heads = heads[:limit]
        next_cursor = f"{heads[-1][-2]}.{heads[-1][-1]}"
    infos = d.infos(heads)
    if flat or not infos:
        return SessionTreePage([TreeRow(i, 0) for i in infos], next_cursor)
    same = " AND s.project = ?" if project is not None else ""
    below = yield Rows(
        "WITH RECURSIVE tree(tid, tdepth) AS ("
        f" SELECT s.id, 1 FROM sessions s WHERE {d.any_of('s.parent_id')} AND {live_session('s')}{same}"
        " UNION ALL SELECT s.id, t.tdepth + 1 FROM sessions s JOIN tree t ON s.parent_id = t.tid"
        f" WHERE t.tdepth < ? AND {live_session('s')}{same})"
        # CROSS JOIN keeps the forks found first: SQLite 3.50 would otherwise scan every session
        # by the time index and probe the tree (a page then costs more with every session)
        f" SELECT {d.info_columns} FROM tree CROSS JOIN sessions s WHERE s.id = tree.tid"
        f" ORDER BY s.{order} DESC, s.sid DESC",
        [
            d.list_arg(i.session_id for i in infos),
            now,
            *([project] if project is not None else []),
            MAX_DEPTH,
            now,
            *([project] if project is not None else []),
        ],
    )
    return SessionTreePage(_placed(infos, d.infos(below)), next_cursor)


def _placed(heads: Sequence[SessionInfo], forks: Sequence[SessionInfo]) -> list[TreeRow]:
    """The heads, each followed depth first by its forks (newest first); a ``parent_id`` cycle
    places each session once."""
    children: dict[str, list[SessionInfo]] = {}
    for info in forks:
        children.setdefault(info.parent_id or "", []).append(info)
    rows: list[TreeRow] = []
    placed: set[str] = set()

    def place(info: SessionInfo, depth: int) -> None:
        if info.session_id in placed:
            return
        placed.add(info.session_id)
        rows.append(TreeRow(info, depth))
        for child in children.get(info.session_id, []):
            place(child, depth + 1)

    for head in heads:
        place(head, 0)
    return rows
