"""Rows kept beside sessions for ``axio-context copy``: agents' saved resumable state (by the id
of its session; the subagent sessions travel with the sessions) and framework conversation
records with their entries' places (pydantic-ai's ConversationStore), as stored."""

from __future__ import annotations

from typing import Any

from axio_context.copying import ConversationEntryRow, ConversationRow, StateRow

from ..store.transactions import write_tx

__all__ = [
    "dump_conversations",
    "dump_entries",
    "dump_states",
    "load_conversation",
    "load_entry",
    "load_state",
]


def dump_states(c: Any) -> list[StateRow]:
    """Every saved state, by session id."""
    rows = c.execute(
        "SELECT s.id, t.type, t.state, t.subagents, t.saved_at FROM session_states t"
        " JOIN sessions s ON s.sid = t.sid ORDER BY s.id"
    ).fetchall()
    return [StateRow(*r) for r in rows]


def load_state(c: Any, row: StateRow) -> bool:
    """Store a copied state with its session; False (nothing written) when the session is absent."""
    with write_tx(c):
        found = c.execute("SELECT sid FROM sessions WHERE id = ?", (row.session_id,)).fetchone()
        if found is None:
            return False
        c.execute(
            "INSERT INTO session_states (sid, type, state, subagents, saved_at) VALUES (?, ?, ?, ?, ?)",
            (found[0], row.type, row.state, row.subagents, row.saved_at),
        )
        return True


def dump_conversations(c: Any) -> list[ConversationRow]:
    """Every conversation record, by id."""
    rows = c.execute(
        "SELECT id, scope, revision, updated_us, head_session, head_position, record"
        " FROM conversation_records ORDER BY id"
    ).fetchall()
    return [ConversationRow(r[0], r[1], r[2], r[3], r[4], r[5], bytes(r[6])) for r in rows]


def load_conversation(c: Any, row: ConversationRow) -> None:
    """Add a conversation record the database lacks."""
    with write_tx(c):
        c.execute(
            "INSERT INTO conversation_records (id, scope, revision, updated_us, head_session, head_position,"
            " record) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.scope,
                row.revision,
                row.updated_us,
                row.head_session,
                row.head_position,
                row.record,
            ),
        )


def dump_entries(c: Any) -> list[ConversationEntryRow]:
    """Every conversation entry's place, by entry id."""
    rows = c.execute("SELECT id, session_id, position FROM conversation_entries ORDER BY id").fetchall()
    return [ConversationEntryRow(*r) for r in rows]


def load_entry(c: Any, row: ConversationEntryRow) -> None:
    """Add an entry's place the database lacks."""
    with write_tx(c):
        c.execute(
            "INSERT INTO conversation_entries (id, session_id, position) VALUES (?, ?, ?)",
            (row.id, row.session_id, row.position),
        )
