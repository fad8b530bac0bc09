"""Agent threads and runs on any SQL backend, written once as plans (:mod:`axio_context.sql`):
finding or making an agent's session in a thread, claiming a run, a page of the history, counts,
run ids, ``clear``, ``clear_run`` with its preview, and the copy's runs. A backend gives its
:class:`ThreadStatements` for what its schema keeps its own way (how a transcript's rows are
reached through forks, how marks and run tags point at them).

An agent's conversation in a thread is one ordinary session (so listing, search and export see
it) with an ``agent_sessions`` row saying whose it is. Its id is ``<thread_id>:<agent_id>`` (just
the thread id for the agent ``""``), or a hash of both when that is taken by another agent's
conversation or too long (see :mod:`.threads`): the same on every backend, so a copy keeps names.
A thread is the row :data:`FIND` reads: ``sid, id, next_position`` and then the backend's own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from ..copying import RunRow
from ..messages import Message, preview_for
from ..sql import Dialect, Execute, Native, Plan, Row, Rows, Value
from .errors import RunSessionError
from .threads import hashed_session_id, readable_session_id, visible_window

__all__ = [
    "MAX_ID",
    "ThreadStatements",
    "claim_run",
    "clear_run",
    "clear_thread",
    "count",
    "dump_runs",
    "ensure_thread",
    "find_thread",
    "load_run",
    "page",
    "run_ids",
]

#: The longest plain session id (SQLite's schema refuses longer ones; kept on every backend so
#: copies between them agree).
MAX_ID: Final = 256
#: How many messages past a hidden preview are read at a time to find the next one.
PREVIEW_PAGE: Final = 64
#: The key locked while a thread's session is made, where other writers could make it too.
_THREAD_KEY: Final = "axio agent threads"


def _now() -> int:
    return time.time_ns() // 1_000_000


class ThreadStatements(Protocol):
    """What one backend's schema keeps its own way, for the plans of this module. The natives
    take the transaction's connection first."""

    #: The columns of a thread after ``s.sid, s.id, s.next_position`` (``s``: its session row),
    #: with a leading comma, or "".
    thread_columns: str
    #: Appended to the thread lookup to lock its session row until the transaction ends.
    lock_thread: str
    #: ``(conn, session_id, project, now)``: the session, unless one of that id exists.
    create_session: Callable[..., Any]
    #: ``(conn, thread)``: empty the session (forks keep theirs) and drop its marks.
    clear_session: Callable[..., Any]
    #: ``(conn, thread, start, end)``: ``(position, message)`` of positions ``[start, end)``.
    messages: Callable[..., Any]
    #: ``(conn, thread)``: the positions ``clear_run`` hid, ascending.
    hidden: Callable[..., Any]
    #: ``(conn, thread, run_key)``: mark the run's rows hidden; how many.
    hide_run: Callable[..., Any]
    #: ``(conn, thread)``: ``position -> run_id`` of the tagged rows of the transcript.
    tags: Callable[..., Any]
    #: ``(conn)``: ``run_id -> [(session id, position)]`` over every session (for a copy).
    every_tag: Callable[..., Any]
    #: ``(conn, session_id, position, run_key)``: tag that position's row, if the session has it.
    tag: Callable[..., Any]


def find_thread(
    d: Dialect, sql: ThreadStatements, agent_id: str, thread_id: str, *, lock: bool = False
) -> Plan[Any]:
    """The thread (its session row), locked when ``lock``; None if it has none yet."""
    found = yield Row(
        f"SELECT s.sid, s.id, s.next_position{sql.thread_columns} FROM agent_sessions a"
        " JOIN sessions s ON s.sid = a.sid WHERE a.agent_id = ? AND a.thread_id = ?"
        + (sql.lock_thread if lock else ""),
        (agent_id, thread_id),
    )
    return found


def _name(d: Dialect, agent_id: str, thread_id: str) -> Plan[str]:
    plain = readable_session_id(agent_id, thread_id)
    if len(plain) <= MAX_ID:
        taken = yield Value(
            "SELECT 1 FROM sessions s JOIN agent_sessions a ON a.sid = s.sid WHERE s.id = ?", (plain,)
        )
        if taken is None:  # free, or a plain session of that name: the agent adopts it
            return plain
    return hashed_session_id(agent_id, thread_id)


def ensure_thread(
    d: Dialect, sql: ThreadStatements, agent_id: str, thread_id: str, project: str | None
) -> Plan[Any]:
    """The thread, locked, its session made with its agent row on first use."""
    found = yield from find_thread(d, sql, agent_id, thread_id, lock=True)
    if found is not None:
        return found
    if d.key_lock is not None:  # two writers making the same thread: one names it, one finds it
        yield Execute(d.key_lock, (_THREAD_KEY,))
        found = yield from find_thread(d, sql, agent_id, thread_id, lock=True)
        if found is not None:
            return found
    name = yield from _name(d, agent_id, thread_id)
    yield Native(sql.create_session, (name, project, _now()))
    yield Execute(
        "INSERT INTO agent_sessions (sid, agent_id, thread_id) SELECT sid, ?, ? FROM sessions WHERE id = ?",
        (agent_id, thread_id, name),
    )
    return (yield from find_thread(d, sql, agent_id, thread_id, lock=True))


def claim_run(d: Dialect, run_id: str, thread_id: str) -> Plan[int]:
    """The run's key, registering it on first use; a run id of another thread is refused."""
    query = "SELECT id, thread_id FROM agent_runs WHERE run_id = ?"
    r = yield Row(query, (run_id,))
    if r is None:
        yield Execute(
            "INSERT INTO agent_runs (run_id, thread_id, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id) DO NOTHING",
            (run_id, thread_id, _now()),
        )
        r = yield Row(query, (run_id,))
    if r[1] != thread_id:
        raise RunSessionError(f"run_id {run_id!r} belongs to session {r[1]!r}, not {thread_id!r}")
    return int(r[0])


def page(
    d: Dialect, sql: ThreadStatements, agent_id: str, thread_id: str, limit: int | None, offset: int
) -> Plan[list[Message]]:
    """Visible messages ``offset .. offset + limit`` of the thread: only their rows are read."""
    found = yield from find_thread(d, sql, agent_id, thread_id)
    if found is None or limit == 0:
        return []
    hidden = yield Native(sql.hidden, (found,))
    start, end = visible_window(hidden, offset, limit, int(found[2]))
    if start >= end:
        return []
    gone = set(hidden)
    return [m for p, m in (yield Native(sql.messages, (found, start, end))) if p not in gone]


def count(d: Dialect, sql: ThreadStatements, agent_id: str, thread_id: str) -> Plan[int]:
    """How many messages :func:`page` gives without a limit."""
    found = yield from find_thread(d, sql, agent_id, thread_id)
    if found is None:
        return 0
    return int(found[2]) - len((yield Native(sql.hidden, (found,))))


def run_ids(d: Dialect, sql: ThreadStatements, agent_id: str, thread_id: str) -> Plan[list[str]]:
    """The run id of each visible message of the thread (``""`` for untagged ones), in order."""
    found = yield from find_thread(d, sql, agent_id, thread_id)
    if found is None:
        return []
    tags = yield Native(sql.tags, (found,))
    gone = set((yield Native(sql.hidden, (found,))))
    return [tags.get(p, "") for p in range(int(found[2])) if p not in gone]


def clear_thread(d: Dialect, sql: ThreadStatements, agent_id: str, thread_id: str) -> Plan[None]:
    """Forget the thread's history (forks of it keep theirs)."""
    found = yield from find_thread(d, sql, agent_id, thread_id, lock=True)
    if found is not None:
        yield Native(sql.clear_session, (found,))


def clear_run(d: Dialect, sql: ThreadStatements, agent_id: str, thread_id: str, run_id: str) -> Plan[int]:
    """Hide the run's messages in the thread's session; how many. Unknown thread or run: 0."""
    found = yield from find_thread(d, sql, agent_id, thread_id, lock=True)
    run = yield Value("SELECT id FROM agent_runs WHERE run_id = ?", (run_id,))
    if found is None or run is None:
        return 0
    hidden: int = yield Native(sql.hide_run, (found, int(run)))
    yield from _repreview(d, sql, found)
    return hidden


def _repreview(d: Dialect, sql: ThreadStatements, found: Any) -> Plan[None]:
    """When the preview came from a message now hidden, take it from the first user message
    still visible after it (none: no preview, so the next append sets one)."""
    at = yield Value("SELECT preview_pos FROM sessions WHERE sid = ?", (found[0],))
    if at is None:
        return
    gone = set((yield Native(sql.hidden, (found,))))
    if at not in gone:
        return
    preview: tuple[int, str] | None = None
    start, n = at + 1, int(found[2])
    while preview is None and start < n:
        end = min(start + PREVIEW_PAGE, n)
        visible = [(p, m) for p, m in (yield Native(sql.messages, (found, start, end))) if p not in gone]
        first = preview_for([m for _, m in visible])
        if first is not None:
            preview = (visible[first[0]][0], first[1])
        start = end
    yield Execute(
        "UPDATE sessions SET preview = ?, preview_pos = ? WHERE sid = ?",
        (
            None if preview is None else d.sealed(preview[1]),
            None if preview is None else preview[0],
            found[0],
        ),
    )


def dump_runs(d: Dialect, sql: ThreadStatements) -> Plan[list[RunRow]]:
    """Every run with the (session, position) of every message it tagged, by run id."""
    tags: dict[str, list[tuple[str, int]]] = yield Native(sql.every_tag, ())
    rows: Sequence[Any] = yield Rows(
        f"SELECT run_id, thread_id, created_at FROM agent_runs ORDER BY {d.by_code_point('run_id')}"
    )
    return [RunRow(r[0], r[1], int(r[2]), tuple(sorted(tags.get(r[0], [])))) for r in rows]


def load_run(d: Dialect, sql: ThreadStatements, run: RunRow) -> Plan[None]:
    """Register a copied run (kept when there) and tag its messages; a position a session here
    does not have is left untagged."""
    yield Execute(
        "INSERT INTO agent_runs (run_id, thread_id, created_at) VALUES (?, ?, ?)"
        " ON CONFLICT (run_id) DO NOTHING",
        (run.run_id, run.thread_id, run.created_at),
    )
    key = yield Value("SELECT id FROM agent_runs WHERE run_id = ?", (run.run_id,))
    for session_id, position in run.tags:
        yield Native(sql.tag, (session_id, position, int(key)))
