"""The SQL of the history provider: agent sessions, run tags, pages, counts and ``clear_run``.

An agent's conversation in a thread is one ordinary session (so every other reader sees it) with
an ``agent_sessions`` row saying whose it is. Its id is ``<thread_id>:<agent_id>`` (just the
thread id for the agent ``""``), or a hash of both when that is taken or too long. A run tag is a
``message_runs`` row keyed by the message, written in the same statement as the message (the
temp trigger below) or the same transaction (batches). Every function takes the raw connection
and runs on its thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.agents import RunSessionError
from axio_context.agents.threads import hashed_session_id, readable_session_id, visible_window
from axio_context.messages import Message, preview_for

from ..store import appending, hiding, reading, sessions
from ..store.keys import SHIFT, key, now_ms, position_of
from ..store.message_rows import EncodedMessage
from ..store.session_rows import create_session, segments, session_row
from ..store.transactions import read_tx, write_tx

__all__ = [
    "Thread",
    "append_agent",
    "claim_run",
    "clear_run",
    "clear_thread",
    "count",
    "ensure_thread",
    "find_thread",
    "install_agent_append",
    "page",
    "run_ids",
]

#: A thread's session: its internal key and its session id.
Thread = tuple[int, str]

#: The longest session id (schema step 6's trigger refuses longer ones).
_MAX_ID: Final = 256


def find_thread(c: Any, agent_id: str, thread_id: str) -> Thread | None:
    r = c.execute(
        "SELECT a.sid, s.id FROM agent_sessions a JOIN sessions s ON s.sid = a.sid"
        " WHERE a.agent_id = ? AND a.thread_id = ?",
        (agent_id, thread_id),
    ).fetchone()
    return None if r is None else (int(r[0]), str(r[1]))


def _name(c: Any, agent_id: str, thread_id: str) -> str:
    plain = readable_session_id(agent_id, thread_id)
    if len(plain) <= _MAX_ID:
        r = c.execute(
            "SELECT a.agent_id, a.thread_id FROM sessions s JOIN agent_sessions a ON a.sid = s.sid"
            " WHERE s.id = ?",
            (plain,),
        ).fetchone()
        if r is None:  # free, or a plain session of that name: the agent adopts it
            return plain
    return hashed_session_id(agent_id, thread_id)


def ensure_thread(c: Any, agent_id: str, thread_id: str, project: str | None) -> Thread:
    """The thread's session, created with its agent row on first use (one transaction)."""
    found = find_thread(c, agent_id, thread_id)
    if found is not None:
        return found
    with write_tx(c):
        found = find_thread(c, agent_id, thread_id)
        if found is not None:
            return found
        name = _name(c, agent_id, thread_id)
        create_session(c, name, project, now_ms())
        row = session_row(c, name)
        assert row is not None
        c.execute(
            "INSERT INTO agent_sessions (sid, agent_id, thread_id) VALUES (?, ?, ?)",
            (row.sid, agent_id, thread_id),
        )
        return row.sid, name


def claim_run(c: Any, run_id: str, thread_id: str) -> int:
    """The run's key, registering it on first use; a run id of another thread is refused."""
    r = c.execute("SELECT id, thread_id FROM agent_runs WHERE run_id = ?", (run_id,)).fetchone()
    if r is None:
        with write_tx(c):
            c.execute(
                "INSERT OR IGNORE INTO agent_runs (run_id, thread_id, created_at) VALUES (?, ?, ?)",
                (run_id, thread_id, now_ms()),
            )
            r = c.execute("SELECT id, thread_id FROM agent_runs WHERE run_id = ?", (run_id,)).fetchone()
    if r[1] != thread_id:
        raise RunSessionError(f"run_id {run_id!r} belongs to session {r[1]!r}, not {thread_id!r}")
    return int(r[0])


#: One message of an agent in one statement: the agent's session is looked up inside it (so a
#: session deleted or renamed meanwhile is never written under a stale name), the store's append
#: view does the append, and the run tag (when ``run`` is not NULL) goes in beside it, all in
#: the same implicit transaction.
_AGENT_VIEW: Final = """
CREATE TEMP VIEW IF NOT EXISTS axio_append_agent
    (agent_id, thread_id, project, role, flags, created_at, tokens, payload, preview, run)
    AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
"""
_AGENT_TRIGGER: Final = f"""
CREATE TEMP TRIGGER IF NOT EXISTS axio_append_agent_row INSTEAD OF INSERT ON axio_append_agent BEGIN
    SELECT RAISE(ABORT, 'axio: agent session gone') WHERE NOT EXISTS
        (SELECT 1 FROM agent_sessions WHERE agent_id = NEW.agent_id AND thread_id = NEW.thread_id);
    INSERT INTO axio_append
        SELECT s.id, NEW.project, NEW.role, NEW.flags, NEW.created_at, NEW.tokens, NEW.payload, NEW.preview
        FROM agent_sessions a JOIN sessions s ON s.sid = a.sid
        WHERE a.agent_id = NEW.agent_id AND a.thread_id = NEW.thread_id;
    INSERT INTO message_runs (id, run)
        SELECT (s.sid << {SHIFT}) | (s.next_position - 1), NEW.run
        FROM agent_sessions a JOIN sessions s ON s.sid = a.sid
        WHERE NEW.run IS NOT NULL AND a.agent_id = NEW.agent_id AND a.thread_id = NEW.thread_id;
END
"""

#: What the append trigger raises when the agent's session is gone (deleted since it was made).
_GONE: Final = "axio: agent session gone"


def install_agent_append(c: Any) -> None:
    """Create this connection's agent-append view (idempotent)."""
    c.execute(_AGENT_VIEW)
    c.execute(_AGENT_TRIGGER)


def append_agent(
    c: Any,
    agent_id: str,
    thread_id: str,
    project: str | None,
    encoded: Sequence[EncodedMessage],
    tokens: Sequence[int],
    preview: tuple[int, str] | None,
    run: int | None,
    *,
    inline: bool = False,
) -> bool:
    """Append a batch to the agent's session in the thread (made if missing), tagged with run
    key ``run`` (None: untagged): all of it and its tags, or nothing.

    ``inline`` as :func:`..store.appending.append` (on the event loop's thread: no fold);
    returns whether the keyword-index queue is long.
    """
    # one plain message (no media, no id/timestamp/metadata): one statement through the trigger
    if len(encoded) == 1 and not encoded[0].blobs and encoded[0].extra is None and not c.in_transaction:
        e, text = encoded[0], None if preview is None else preview[1]
        sql = "INSERT INTO temp.axio_append_agent VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        args = [agent_id, thread_id, project, e.role, e.flags, now_ms(), tokens[0], e.payload, text, run]
        try:
            c.execute(sql, args)
        except Exception as exc:
            if _GONE not in str(exc):
                raise
            ensure_thread(c, agent_id, thread_id, project)
            c.execute(sql, args)  # a second failure has another cause: let it raise
        return False
    with write_tx(c):
        sid, name = ensure_thread(c, agent_id, thread_id, project)
        long_queue = appending.append(c, name, project, encoded, tokens, preview, inline=inline)
        if run is not None:
            row = session_row(c, name)
            assert row is not None
            first = row.next_position - len(encoded)
            c.executemany(
                "INSERT INTO message_runs (id, run) VALUES (?, ?)",
                [(key(sid, p), run) for p in range(first, row.next_position)],
            )
    return long_queue


def page(c: Any, agent_id: str, thread_id: str, limit: int | None, offset: int) -> list[Message]:
    """Visible messages ``offset .. offset + limit`` of the thread: only their rows are read."""
    with read_tx(c):
        found = find_thread(c, agent_id, thread_id)
        if found is None or limit == 0:
            return []
        sid, name = found
        row = session_row(c, name)
        assert row is not None
        hidden = hiding.hidden_in(c, sid)
        start, end = visible_window(hidden, offset, limit, row.next_position)
        if start >= end:
            return []
        return hiding.drop_hidden(c, sid, start, reading.read_messages(c, name, row, start, end))


def count(c: Any, agent_id: str, thread_id: str) -> int:
    with read_tx(c):
        found = find_thread(c, agent_id, thread_id)
        if found is None:
            return 0
        row = session_row(c, found[1])
        assert row is not None
        return row.next_position - hiding.hidden_count(c, found[0])


def _run_positions(c: Any, name: str, run: int) -> list[int]:
    row = session_row(c, name)
    assert row is not None
    out: list[int] = []
    for owner, lo, hi in segments(c, row):
        out.extend(
            position_of(int(r[0]))
            for r in c.execute(
                "SELECT id FROM message_runs WHERE run = ? AND id >= ? AND id < ?",
                (run, key(owner, lo), key(owner, hi)),
            )
        )
    return out


def clear_run(c: Any, agent_id: str, thread_id: str, run_id: str) -> int:
    """Hide the run's messages in the thread's session; returns how many. Unknown: 0."""
    with write_tx(c):
        found = find_thread(c, agent_id, thread_id)
        r = c.execute("SELECT id FROM agent_runs WHERE run_id = ?", (run_id,)).fetchone()
        if found is None or r is None:
            return 0
        positions = _run_positions(c, found[1], int(r[0]))
        c.executemany(
            "INSERT OR IGNORE INTO hidden_messages (sid, position) VALUES (?, ?)",
            [(found[0], p) for p in positions],
        )
        _repreview(c, found, set(positions))
        return len(positions)


#: How many messages past a hidden preview are read at a time to find the next one.
_PREVIEW_PAGE: Final = 64


def _repreview(c: Any, thread: Thread, cleared: set[int]) -> None:
    """When the preview came from a message just hidden, take it from the first user message
    still visible after it (none: no preview, so the next append sets one)."""
    sid, name = thread
    at = c.execute("SELECT preview_pos FROM sessions WHERE sid = ?", (sid,)).fetchone()[0]
    if at is None or at not in cleared:
        return
    row = session_row(c, name)
    assert row is not None
    found: tuple[int, str] | None = None
    start = at + 1
    while found is None and start < row.next_position:
        end = min(start + _PREVIEW_PAGE, row.next_position)
        hidden = set(hiding.hidden_in(c, sid, start, end))
        page = reading.read_messages(c, name, row, start, end)
        visible = [(p, m) for p, m in enumerate(page, start) if p not in hidden]
        first = preview_for([m for _, m in visible])
        if first is not None:
            found = (visible[first[0]][0], first[1])
        start = end
    c.execute(
        "UPDATE sessions SET preview = ?, preview_pos = ? WHERE sid = ?",
        (None if found is None else found[1], None if found is None else found[0], sid),
    )


def clear_thread(c: Any, agent_id: str, thread_id: str) -> None:
    found = find_thread(c, agent_id, thread_id)
    if found is not None:
        sessions.clear(c, found[1])


def run_ids(c: Any, agent_id: str, thread_id: str) -> list[str]:
    """The run id of each visible message of the thread (``""`` for untagged ones), in order."""
    with read_tx(c):
        found = find_thread(c, agent_id, thread_id)
        if found is None:
            return []
        sid, name = found
        row = session_row(c, name)
        assert row is not None
        tags: dict[int, str] = {}
        for owner, lo, hi in segments(c, row):
            for mid, run_id in c.execute(
                "SELECT m.id, r.run_id FROM message_runs m JOIN agent_runs r ON r.id = m.run"
                " WHERE m.id >= ? AND m.id < ?",
                (key(owner, lo), key(owner, hi)),
            ):
                tags[position_of(int(mid))] = str(run_id)
        every = [tags.get(p, "") for p in range(row.next_position)]
        return hiding.drop_hidden(c, sid, 0, every)
