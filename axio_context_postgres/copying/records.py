"""Rows kept beside sessions on PostgreSQL, for a copy: agents' saved resumable state (by the id
of its session) and framework conversation records with their entries' places, as stored (the
SQLite backend's: its ``state.transfer``)."""

from __future__ import annotations

from typing import Any

from axio_context.copying import ConversationEntryRow, ConversationRow, StateRow

__all__ = [
    "dump_conversations",
    "dump_entries",
    "dump_states",
    "load_conversation",
    "load_entry",
    "load_state",
]


async def dump_states(conn: Any) -> list[StateRow]:
    """Every saved state, by session id."""
    rows = await conn.fetch(
        "SELECT s.id, t.type, t.state, t.subagents, t.saved_at FROM session_states t"
        ' JOIN sessions s ON s.sid = t.sid ORDER BY s.id COLLATE "C"'
    )
    return [StateRow(r[0], r[1], r[2], r[3], int(r[4])) for r in rows]


async def load_state(conn: Any, row: StateRow) -> bool:
    """Store a copied state with its session; False (nothing written) when the session is absent."""
    sid = await conn.fetchval("SELECT sid FROM sessions WHERE id = $1", row.session_id)
    if sid is None:
        return False
    await conn.execute(
        "INSERT INTO session_states (sid, type, state, subagents, saved_at) VALUES ($1, $2, $3, $4, $5)",
        sid,
        row.type,
        row.state,
        row.subagents,
        row.saved_at,
    )
    return True


async def dump_conversations(conn: Any) -> list[ConversationRow]:
    """Every conversation record, by id."""
    rows = await conn.fetch(
        "SELECT id, scope, revision, updated_us, head_session, head_position, record"
        ' FROM conversation_records ORDER BY id COLLATE "C"'
    )
    return [ConversationRow(r[0], r[1], r[2], int(r[3]), r[4], r[5], bytes(r[6])) for r in rows]


async def load_conversation(conn: Any, row: ConversationRow) -> None:
    """Add a conversation record the database lacks."""
    await conn.execute(
        "INSERT INTO conversation_records (id, scope, revision, updated_us, head_session, head_position,"
        " record) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        row.id,
        row.scope,
        row.revision,
        row.updated_us,
        row.head_session,
        row.head_position,
        row.record,
    )


async def dump_entries(conn: Any) -> list[ConversationEntryRow]:
    """Every conversation entry's place, by entry id."""
    rows = await conn.fetch(
        'SELECT id, session_id, position FROM conversation_entries ORDER BY id COLLATE "C"'
    )
    return [ConversationEntryRow(r[0], r[1], int(r[2])) for r in rows]


async def load_entry(conn: Any, row: ConversationEntryRow) -> None:
    """Add an entry's place the database lacks."""
    await conn.execute(
        "INSERT INTO conversation_entries (id, session_id, position) VALUES ($1, $2, $3)",
        row.id,
        row.session_id,
        row.position,
    )
