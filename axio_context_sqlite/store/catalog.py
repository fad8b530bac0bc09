"""Sessions one at a time: resolving ids and prefixes, reading a session's fields and messages
(``show``), fork, delete, rename and title.

Like the store modules, every function here is synchronous and runs on a connection's worker
thread (through :func:`..store.connection.run`), one thread hop per call. Single-session writes
and deletes go through :mod:`..store.sessions` (``sessions.delete_session`` frees blobs and keeps forks'
views).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

from axio_context.catalog.expiry_sql import due_sessions, live_session
from axio_context.errors import (
    AmbiguousSessionError,
    SessionExistsError,
    SessionNotFoundError,
)
from axio_context.expiry import now_ms
from axio_context.lineage import shared_rows
from axio_context.transcript import (
    CheckpointRecord,
    MessageRecord,
    SessionHeader,
    format_time,
)
from axio_context.transcript.hidden import shared_visible
from axio_context.views import SessionSort, sort_column
from axio_context.views import SessionView as SessionView  # re-exported

from . import hiding, keys, reading, runs, session_rows, sessions, transactions

#: Expired sessions are never found here (bind now): the core's one condition.
_LIVE: Final = live_session()

# --- resolving ids -------------------------------------------------------------------------------


def _prefix_range(prefix: str) -> tuple[str, str] | None:
    last = ord(prefix[-1])
    if last >= 0x10FFFF:
        return None
    return prefix, prefix[:-1] + chr(last + 1)


def ids_with_prefix(c: Any, prefix: str, limit: int) -> list[str]:
    """Session ids starting with ``prefix`` (an index range scan), newest first."""
    if not prefix:
        rows = c.execute(
            f"SELECT id FROM sessions WHERE {_LIVE} ORDER BY created_at DESC, sid DESC LIMIT ?",
            (now_ms(), limit),
        ).fetchall()
        return [r[0] for r in rows]
    bounds = _prefix_range(prefix)
    if bounds is None:
        rows = c.execute(
            f"SELECT id FROM sessions WHERE substr(id, 1, length(?)) = ? AND {_LIVE} ORDER BY id LIMIT ?",
            (prefix, prefix, now_ms(), limit),
        ).fetchall()
    else:
        rows = c.execute(
            f"SELECT id FROM sessions WHERE id >= ? AND id < ? AND {_LIVE} ORDER BY id LIMIT ?",
            (*bounds, now_ms(), limit),
        ).fetchall()
    return [r[0] for r in rows]


def resolve(c: Any, prefix: str) -> str:
    """The one session id equal to, or else starting with, ``prefix``."""
    if not prefix:
        raise SessionNotFoundError("a session id (or a prefix of one) must not be empty")
    if c.execute(f"SELECT 1 FROM sessions WHERE id = ? AND {_LIVE}", (prefix, now_ms())).fetchone():
        return prefix
    found = ids_with_prefix(c, prefix, 11)
    if not found:
        raise SessionNotFoundError(f"no session id starts with {prefix!r}")
    if len(found) > 1:
        shown = ", ".join(found[:10]) + (", ..." if len(found) > 10 else "")
        raise AmbiguousSessionError(
            f"{prefix!r} matches {'more than 10' if len(found) > 10 else len(found)} sessions: {shown}",
            found[:10],
        )
    return str(found[0])


def latest(c: Any, sort: SessionSort = "created") -> str:
    """The newest session's id (the first row of a listing in the same ``sort``)."""
    # A subagent's session (owner_id set) is part of its owner's: "the newest" is never one.
    order = sort_column(sort)
    r = c.execute(
        f"SELECT id FROM sessions WHERE owner_id IS NULL AND {_LIVE} ORDER BY {order} DESC, sid DESC LIMIT 1",
        (now_ms(),),
    ).fetchone()
    if r is None:
        raise SessionNotFoundError("the database holds no sessions yet")
    return str(r[0])


# --- reading sessions ----------------------------------------------------------------------------

FULL_COLUMNS: Final = (
    f"{session_rows.ROW_COLUMNS}, id, title, metadata, created_at, updated_at, parent_id, fork_position,"
    " input_tokens, output_tokens, owner_id, agent_name"
)


class FullRow(session_rows.SessionRow):
    """A session's whole row: the lineage part every read needs, then the rest, as in ``FULL_COLUMNS``."""

    id: str
    title: str | None
    metadata: str | None
    created_at: int
    updated_at: int
    parent_id: str | None
    fork_position: int | None
    input_tokens: int
    output_tokens: int
    owner_id: str | None  # a subagent's history: its owner session and its name there
    agent_name: str | None


def full_row(c: Any, session_id: str) -> FullRow:
    r = c.execute(
        f"SELECT {FULL_COLUMNS} FROM sessions WHERE id = ? AND {_LIVE}", (session_id, now_ms())
    ).fetchone()
    if r is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return FullRow(*r)


def _checkpoints(c: Any, s: FullRow) -> list[CheckpointRecord]:
    rows = c.execute(
        "SELECT seq, position, summary, tokens_before, tokens_after, summarizer, created_at"
        " FROM checkpoints WHERE sid = ? ORDER BY seq",
        (s.sid,),
    ).fetchall()
    return [
        CheckpointRecord(
            id=seq,
            position=position,
            summary=reading.decode_summary(s.id, summary),
            tokens_before=before,
            tokens_after=after,
            summarizer=summarizer,
            created_at=format_time(created),
        )
        for seq, position, summary, before, after, summarizer, created in rows
    ]


def _metadata(s: FullRow) -> dict[str, Any] | None:
    return None if s.metadata is None else sessions.decode_metadata(s.id, s.metadata)


def session_header(c: Any, s: FullRow, inherited: int) -> SessionHeader:
    agent = runs.agent_of(c, s.sid)
    return SessionHeader(
        owner_id=s.owner_id,
        agent_name=s.agent_name,
        agent_id=None if agent is None else agent[0],
        thread_id=None if agent is None else agent[1],
        id=s.id,
        project=s.project,
        title=s.title,
        metadata=_metadata(s),
        created_at=format_time(s.created_at),
        updated_at=format_time(s.updated_at),
        parent_id=s.parent_id,
        fork_position=s.fork_position,
        inherited=inherited,
        message_count=s.next_position,
        input_tokens=s.input_tokens,
        output_tokens=s.output_tokens,
        checkpoints=_checkpoints(c, s),
    )


def records(c: Any, s: FullRow, start: int, end: int) -> list[MessageRecord]:
    """Positions ``[start, end)`` with their created times (those ``clear_run`` hid left out)."""
    times: list[int] = []
    messages = reading.read_messages(c, s.id, s, start, end, times=times)
    return hiding.drop_hidden(
        c, s.sid, start, [MessageRecord.of(m, format_time(t)) for m, t in zip(messages, times, strict=True)]
    )


def show(c: Any, session_id: str, full: bool, run_id: str | None = None) -> SessionView:
    """A session's fields and its model view (or, with ``full``, every message): one snapshot.
    ``run_id`` keeps only that run's messages."""
    with transactions.read_tx(c):
        s = full_row(c, session_id)
        header = session_header(c, s, 0)
        summary, start = None, 0
        if not full and header.checkpoints:
            summary, start = header.checkpoints[-1].summary, header.checkpoints[-1].position
        messages = records(c, s, start, s.next_position)
        positions = hiding.drop_hidden(c, s.sid, start, range(start, s.next_position))
        tags = runs.runs_at(c, s, start, s.next_position)
        run_ids = [tags.get(p, "") for p in positions]
        if run_id is not None:
            kept = [i for i, r in enumerate(run_ids) if r == run_id]
            messages, positions = [messages[i] for i in kept], [positions[i] for i in kept]
            run_ids = [run_id] * len(kept)
        agent = runs.agent_of(c, s.sid)
        return SessionView(
            header,
            summary,
            start,
            messages,
            positions=positions,
            runs=run_ids,
            agent_id=None if agent is None else agent[0],
            thread_id=None if agent is None else agent[1],
            hidden=hiding.hidden_count(c, s.sid),
        )


# --- fork, delete, rename ------------------------------------------------------------------------


def fork(c: Any, session_id: str, new_id: str) -> None:
    """Fork an existing session (:func:`..store.sessions.fork`), refusing a taken id."""
    full_row(c, session_id)
    if session_rows.session_row(c, new_id) is not None:
        raise SessionExistsError(f"a session {new_id!r} already exists")
    sessions.fork(c, session_id, None, new_id)


def delete_sessions(c: Any, session_ids: Sequence[str]) -> list[str]:
    """Delete sessions through :func:`..store.sessions.delete_session`, newest first (so no fork of a doomed
    parent is detached just to be deleted too); returns the ids that existed."""
    rows = []
    for i in dict.fromkeys(session_ids):
        r = c.execute("SELECT sid FROM sessions WHERE id = ?", (i,)).fetchone()
        if r is not None:
            rows.append((int(r[0]), i))
    deleted = []
    for _, i in sorted(rows, reverse=True):
        if sessions.delete_session(c, i):
            deleted.append(i)
    return deleted


def rename(c: Any, old: str, new: str) -> None:
    """Change a session's id; forks' ``parent_id`` follows."""
    if not new:
        raise ValueError("a session id must not be empty")
    with transactions.write_tx(c):
        full_row(c, old)
        if session_rows.session_row(c, new) is not None:
            raise SessionExistsError(f"a session {new!r} already exists")
        now = keys.now_ms()
        c.execute("UPDATE sessions SET id = ?, updated_at = ? WHERE id = ?", (new, now, old))
        c.execute("UPDATE sessions SET parent_id = ? WHERE parent_id = ?", (new, old))


def set_title(c: Any, session_id: str, title: str | None) -> None:
    """Set or clear the title of an existing session."""
    full_row(c, session_id)
    sessions.set_title(c, session_id, None, title)


def _shared_prefix(c: Any, child: FullRow, parent: FullRow) -> int:
    """How many leading positions of ``child`` are the very rows of ``parent``'s transcript."""
    if child.base_sid is None:
        return 0
    a = session_rows.segments(c, child, 0, child.base_len)
    b = session_rows.segments(c, parent, 0, min(child.base_len, parent.next_position))
    return shared_rows(a, b)


def inherited_from_parent(c: Any, s: FullRow, exported: set[int] | None) -> int:
    """``inherited`` for ``s``: its prefix shared with a parent exported before it, else 0."""
    if s.base_sid is None or s.parent_id is None:
        return 0
    r = c.execute(f"SELECT {FULL_COLUMNS} FROM sessions WHERE id = ?", (s.parent_id,)).fetchone()
    if r is None:
        return 0
    parent = FullRow(*r)
    # A parent is always older than its fork (smaller sid), and exports go in sid order.
    if parent.sid >= s.sid or (exported is not None and parent.sid not in exported):
        return 0
    shared = _shared_prefix(c, s, parent)
    # the parent's record lacks what it hides: the fork takes no more than both show alike
    mine, theirs = hiding.hidden_in(c, s.sid, 0, shared), hiding.hidden_in(c, parent.sid, 0, shared)
    return shared_visible(shared, mine, theirs)


def stored_role_and_time(c: Any, s: FullRow, position: int) -> tuple[int | None, int]:
    """The role code and created time of a session's position, read without decoding it."""
    [(sid, _, _)] = session_rows.segments(c, s, position, position + 1)
    r = c.execute("SELECT role, created_at FROM messages WHERE id = ?", (keys.key(sid, position),)).fetchone()
    return (None, 0) if r is None else (int(r[0]), int(r[1]))


def all_full_rows(c: Any) -> tuple[int, Iterator[FullRow]]:
    """Every session, oldest first, and their messages in all (for an export's progress)."""
    total = int(c.execute("SELECT COALESCE(SUM(next_position), 0) FROM sessions").fetchone()[0])
    # expired sessions are skipped by sid (a separate read: this scan stays lazy and its
    # statement untouched, which the export's other reads on the connection must not reset)
    gone = {sid for (sid,) in c.execute(due_sessions(), (now_ms(),))}
    rows = c.execute(f"SELECT {FULL_COLUMNS} FROM sessions ORDER BY sid")
    return total, (FullRow(*r) for r in rows if r[0] not in gone)


def agent_session(c: Any, agent_id: str, thread_id: str) -> str:
    """The id of the session holding ``agent_id``'s history in thread ``thread_id``."""
    r = c.execute(
        "SELECT s.id FROM agent_sessions a JOIN sessions s ON s.sid = a.sid"
        " WHERE a.agent_id = ? AND a.thread_id = ?",
        (agent_id, thread_id),
    ).fetchone()
    if r is None:
        raise SessionNotFoundError(f"agent {agent_id!r} has no session in thread {thread_id!r}")
    return str(r[0])
