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

from typing import Any, Final

from axio_context.messages import SessionInfo
from axio_context.transcript import MessageRecord
from axio_context.views import MAX_DEPTH, MAX_PAGE, SessionSort, SessionTreePage, TreeRow, sort_column

from . import hiding, listing, transactions
from .catalog import SessionView, full_row, records, session_header

__all__ = [
    "MAX_DEPTH",
    "MAX_PAGE",
    "SessionTreePage",
    "TreeRow",
    "data_version",
    "message_window",
    "session_tree",
    "transcript",
]


def data_version(c: Any) -> int:
    """SQLite's ``PRAGMA data_version``: a number that changes when another connection commits."""
    return int(c.execute("PRAGMA data_version").fetchone()[0])


def _page_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, not {limit!r}")
    return limit


def _cursor(cursor: str) -> tuple[int, int]:
    try:
        created, sid = cursor.split(".")
        return int(created), int(sid)
    except ValueError:
        raise ValueError(f"not a session-tree cursor: {cursor!r}") from None


def _like(text: str) -> str:
    """``text`` as a LIKE pattern matching it anywhere (its own % and _ taken literally)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_TEXT_MATCH: Final = (
    "(id LIKE :text ESCAPE '\\' OR title LIKE :text ESCAPE '\\' OR preview LIKE :text ESCAPE '\\'"
    " OR project LIKE :text ESCAPE '\\')"
)


def session_tree(
    c: Any,
    project: str | None,
    text: str | None,
    limit: int,
    cursor: str | None,
    agent_id: str | None = None,
    sort: SessionSort = "created",
) -> SessionTreePage:
    """Heads newest first (by ``sort``: creation or last activity), each followed by its forks
    (newest first, at any depth).

    A head is a session whose parent is gone or, with ``project``, filed elsewhere. ``text``
    (matched case-insensitively in id, title, preview and project) lists the matching sessions
    flat instead, newest first, a fork with its ``parent_id`` to say whose it is; so does
    ``agent_id``, keeping the sessions that hold that agent's conversations.
    """
    limit = _page_limit(limit)
    order = sort_column(sort)
    args: dict[str, Any] = {"limit": limit + 1}
    where: list[str] = []
    if project is not None:
        where.append("s.project = :project")
        args["project"] = project
    if agent_id is not None:
        where.append("s.sid IN (SELECT a.sid FROM agent_sessions a WHERE a.agent_id = :agent)")
        args["agent"] = agent_id
    flat = bool(text) or agent_id is not None
    if text:
        where.append(_TEXT_MATCH)  # unqualified names are the outer query's (s)
        args["text"] = _like(text)
    if not flat:
        same = " AND p.project = :project" if project is not None else ""
        where.append(f"NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_id{same})")
    if cursor is not None:
        created, sid = _cursor(cursor)
        where.append(f"(s.{order} < :created OR (s.{order} = :created AND s.sid < :sid))")
        args.update(created=created, sid=sid)
    sql = (
        f"SELECT {listing.INFO_COLUMNS}, s.{order}, s.sid"
        f" FROM sessions s WHERE {' AND '.join(where)} ORDER BY s.{order} DESC, s.sid DESC LIMIT :limit"
    )
    with transactions.read_tx(c):
        heads = c.execute(sql, args).fetchall()
        next_cursor = None
        if len(heads) > limit:
            heads = heads[:limit]
            next_cursor = f"{heads[-1][-2]}.{heads[-1][-1]}"
        infos = [listing.info_from_row(h) for h in heads]
        if flat:
            return SessionTreePage([TreeRow(i, 0) for i in infos], next_cursor)
        return SessionTreePage(_with_forks(c, infos, project, order), next_cursor)


def _with_forks(c: Any, heads: list[SessionInfo], project: str | None, order: str) -> list[TreeRow]:
    """The heads, each followed depth first by its forks (newest first): one recursive query
    for the whole page over the parent_id index, not one per session."""
    if not heads:
        return []
    marks = ", ".join("?" * len(heads))
    same = " AND s.project = ?" if project is not None else ""
    args: list[Any] = [h.session_id for h in heads]
    if project is not None:
        args.append(project)
    args.append(MAX_DEPTH)
    if project is not None:
        args.append(project)
    sql = (
        "WITH RECURSIVE tree(tid, tdepth) AS ("
        f" SELECT s.id, 1 FROM sessions s WHERE s.parent_id IN ({marks}){same}"
        " UNION ALL SELECT s.id, t.tdepth + 1 FROM sessions s JOIN tree t ON s.parent_id = t.tid"
        f" WHERE t.tdepth < ?{same})"
        # CROSS JOIN keeps the forks found first: SQLite 3.50 would otherwise scan every session
        # by the time index and probe the tree (a page then costs more with every session)
        f" SELECT {listing.INFO_COLUMNS} FROM tree CROSS JOIN sessions ON sessions.id = tree.tid"
        f" ORDER BY {order} DESC, sid DESC"
    )
    children: dict[str, list[SessionInfo]] = {}
    for r in c.execute(sql, args).fetchall():
        info = listing.info_from_row(r)
        children.setdefault(info.parent_id or "", []).append(info)
    rows: list[TreeRow] = []
    placed: set[str] = set()

    def place(info: SessionInfo, depth: int) -> None:
        if info.session_id in placed:  # a parent_id cycle: each session once
            return
        placed.add(info.session_id)
        rows.append(TreeRow(info, depth))
        for child in children.get(info.session_id, []):
            place(child, depth + 1)

    for head in heads:
        place(head, 0)
    return rows


def transcript(c: Any, session_id: str, full: bool, limit: int) -> SessionView:
    """The last ``limit`` messages of a session's model view (or with ``full`` of every message).

    ``start`` is the first position read; in the model view ``summary`` is the latest
    checkpoint's summary even when the window starts after its position.
    """
    limit = _page_limit(limit)
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
