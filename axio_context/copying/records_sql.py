"""Rows kept beside sessions, for ``axio-context copy``, written once as plans: agents' saved
resumable state (by the id of its session; the subagent sessions travel with the sessions) and
framework conversation records with their entries' places (pydantic-ai's ConversationStore), as
stored. :data:`PLANNED` is every copied layer written once, for each backend's side to run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..memory import transfer_sql as memory
from ..memory_blocks.transfer_sql import dump_blocks, load_block
from ..sql import Dialect, Execute, Plan, Rows, Value
from .rows import ConversationEntryRow, ConversationRow, StateRow

__all__ = [
    "PLANNED",
    "dump_conversations",
    "dump_entries",
    "dump_states",
    "load_conversation",
    "load_entry",
    "load_state",
]


def dump_states(d: Dialect) -> Plan[list[StateRow]]:
    """Every saved state, by session id."""
    rows = yield Rows(
        "SELECT s.id, t.type, t.state, t.subagents, t.saved_at FROM session_states t"
        f" JOIN sessions s ON s.sid = t.sid ORDER BY {d.by_code_point('s.id')}"
    )
    return [StateRow(r[0], r[1], r[2], r[3], int(r[4])) for r in rows]


def load_state(d: Dialect, row: StateRow) -> Plan[bool]:
    """Store a copied state with its session; False (nothing written) when the session is absent."""
    sid = yield Value("SELECT sid FROM sessions WHERE id = ?", (row.session_id,))
    if sid is None:
        return False
    yield Execute(
        "INSERT INTO session_states (sid, type, state, subagents, saved_at) VALUES (?, ?, ?, ?, ?)",
        (sid, row.type, d.sealed(row.state), row.subagents, row.saved_at),
    )
    return True


def dump_conversations(d: Dialect) -> Plan[list[ConversationRow]]:
    """Every conversation record, by id."""
    rows = yield Rows(
        "SELECT id, scope, revision, updated_us, head_session, head_position, record"
        f" FROM conversation_records ORDER BY {d.by_code_point('id')}"
    )
    return [ConversationRow(r[0], r[1], r[2], int(r[3]), r[4], r[5], bytes(r[6])) for r in rows]


def load_conversation(d: Dialect, row: ConversationRow) -> Plan[None]:
    """Add a conversation record the database lacks."""
    yield Execute(
        "INSERT INTO conversation_records (id, scope, revision, updated_us, head_session, head_position,"
        " record) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            row.id,
            row.scope,
            row.revision,
            row.updated_us,
            row.head_session,
            row.head_position,
            d.sealed(row.record),
        ),
    )


def dump_entries(d: Dialect) -> Plan[list[ConversationEntryRow]]:
    """Every conversation entry's place, by entry id."""
    rows = yield Rows(
        f"SELECT id, session_id, position FROM conversation_entries ORDER BY {d.by_code_point('id')}"
    )
    return [ConversationEntryRow(r[0], r[1], int(r[2])) for r in rows]


def load_entry(d: Dialect, row: ConversationEntryRow) -> Plan[None]:
    """Add an entry's place the database lacks."""
    yield Execute(
        "INSERT INTO conversation_entries (id, session_id, position) VALUES (?, ?, ?)",
        (row.id, row.session_id, row.position),
    )


#: A copied layer's plans: ``dump(dialect)`` and ``load(dialect, item)`` (False: not written).
Planned = tuple[Callable[[Dialect], Plan[list[Any]]], Callable[[Dialect, Any], Plan[Any]]]

#: Every copied layer written once (the others are each backend's own: usage, vectors, blobs,
#: pools and runs), by the name :data:`axio_context.copying.layers.LAYERS` gives it.
PLANNED: Final[dict[str, Planned]] = {
    "graph_entities": (memory.dump_entities, memory.load_entity),
    "graph_relationships": (memory.dump_relationships, memory.load_relationship),
    "task_lists": (memory.dump_task_lists, memory.load_task_list),
    "memory_blocks": (dump_blocks, load_block),
    "states": (dump_states, load_state),
    "conversations": (dump_conversations, load_conversation),
    "conversation_entries": (dump_entries, load_entry),
}
