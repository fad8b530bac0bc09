"""SQLite's :class:`~axio_context.agents.sql.ThreadStatements` (the thread plans themselves
are :mod:`axio_context.agents.sql`'s) and its append, the provider's hot path.

A thread here is ``(sid, id, next_position)``. A run tag is a ``message_runs`` row keyed by the
message, written in the same statement as the message (the temp trigger below) or the same
transaction (batches). Every function takes the raw connection and runs on its thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.agents import sql as plans
from axio_context.messages import Message

from ..store import appending, hiding, reading, sessions
from ..store.keys import SHIFT, key, now_ms, position_of
from ..store.message_rows import EncodedMessage
from ..store.runner import SQLITE, drive
from ..store.runs import runs_at
from ..store.session_rows import create_session, segments, session_row
from ..store.transactions import write_tx

__all__ = ["STATEMENTS", "append_agent", "ensure_thread", "install_agent_append"]


def ensure_thread(c: Any, agent_id: str, thread_id: str, project: str | None) -> Any:
    """The thread's session, made with its agent row on first use (one transaction, or a
    savepoint of the caller's)."""
    with write_tx(c):
        return drive(c, plans.ensure_thread(SQLITE, STATEMENTS, agent_id, thread_id, project))


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
        sid, name, _ = ensure_thread(c, agent_id, thread_id, project)
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


def _messages(c: Any, thread: Any, start: int, end: int) -> list[tuple[int, Message]]:
    row = session_row(c, thread[1])
    assert row is not None
    return list(enumerate(reading.read_messages(c, thread[1], row, start, end), start))


def _hide_run(c: Any, thread: Any, run: int) -> int:
    row = session_row(c, thread[1])
    assert row is not None
    positions: list[int] = []
    for owner, lo, hi in segments(c, row):
        positions.extend(
            position_of(int(r[0]))
            for r in c.execute(
                "SELECT id FROM message_runs WHERE run = ? AND id >= ? AND id < ?",
                (run, key(owner, lo), key(owner, hi)),
            )
        )
    c.executemany(
        "INSERT OR IGNORE INTO hidden_messages (sid, position) VALUES (?, ?)",
        [(thread[0], p) for p in positions],
    )
    return len(positions)


def _tags(c: Any, thread: Any) -> dict[int, str]:
    row = session_row(c, thread[1])
    assert row is not None
    return runs_at(c, row, 0, row.next_position)


def _every_tag(c: Any) -> dict[str, list[tuple[str, int]]]:
    tags: dict[str, list[tuple[str, int]]] = {}
    for (session_id,) in c.execute("SELECT id FROM sessions ORDER BY id").fetchall():
        row = session_row(c, session_id)
        assert row is not None  # inside this snapshot
        for position, run_id in runs_at(c, row, 0, row.next_position).items():
            tags.setdefault(run_id, []).append((session_id, position))
    return tags


def _tag(c: Any, session_id: str, position: int, run: int) -> None:
    row = session_row(c, session_id)
    if row is None:
        return
    for owner, _, _ in segments(c, row, position, position + 1):
        c.execute("INSERT OR IGNORE INTO message_runs (id, run) VALUES (?, ?)", (key(owner, position), run))


class _Statements:
    """SQLite's thread statements."""

    thread_columns = ""
    lock_thread = ""  # the write transaction holds the database's write lock
    create_session = staticmethod(create_session)
    clear_session = staticmethod(lambda c, thread: sessions.clear(c, thread[1]))
    messages = staticmethod(_messages)
    hidden = staticmethod(lambda c, thread: hiding.hidden_in(c, thread[0]))
    hide_run = staticmethod(_hide_run)
    tags = staticmethod(_tags)
    every_tag = staticmethod(_every_tag)
    tag = staticmethod(_tag)


#: The one statements object.
STATEMENTS: Final = _Statements()
