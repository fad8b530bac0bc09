"""The rows ``axio-context copy`` carries between two databases for the layers stored beside the
sessions (usage, memory stores, context pools, resumable state, conversation records).

Each backend has a small dump/load pair per layer that speaks these Structs, never the other
backend's tables, so SQLite to PostgreSQL, back and alike are one code path. A row keeps what a
reader can observe exactly (times in milliseconds, document ids, pool versions, positions);
internal keys (row ids, sequence numbers) are the destination's own, remapped where they point.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "BlobRow",
    "CollectionRow",
    "ConversationEntryRow",
    "ConversationRow",
    "DocumentRow",
    "EntityRow",
    "LayerReport",
    "PoolEntryRow",
    "PoolRow",
    "RelationshipRow",
    "RunRow",
    "StateRow",
    "TaskListRow",
    "TaskRow",
    "TurnRow",
    "UsageRow",
    "canonical_json",
]


class LayerReport(msgspec.Struct):
    """What a copy did to one layer: items copied now, items the destination had already, and
    the items it refused (a name on both sides with different content), one line each."""

    copied: int = 0
    already: int = 0
    conflicts: list[str] = []


class UsageRow(msgspec.Struct, frozen=True):
    """One usage record as recorded: ``at`` in ms, ``counts`` in the order of the stored columns,
    ``cost`` the exact decimal as text, ``details`` the stored MessagePack of the maps."""

    at: int
    session: str
    agent: str
    run: str
    model: str
    project: str | None
    position: int | None
    counts: tuple[int, ...]
    audio_seconds: float
    cost: str | None
    details: bytes | None


class DocumentRow(msgspec.Struct, frozen=True):
    """One document of a vector collection: its id, text, JSON metadata (as text, so key order
    and numbers come back as written), float32 embedding and update time (ms)."""

    id: str
    content: str
    metadata: str
    embedding: bytes
    updated_at: int


class CollectionRow(msgspec.Struct, frozen=True):
    """A vector collection with its documents (sorted by id)."""

    name: str
    dimension: int
    embedder: str
    created_at: int
    documents: tuple[DocumentRow, ...]


class BlobRow(msgspec.Struct, frozen=True):
    """A blob store key: its content type, creation time (ms) and bytes."""

    key: str
    content_type: str
    created_at: int
    data: bytes


class EntityRow(msgspec.Struct, frozen=True):
    """A graph entity (``properties`` the JSON object as text)."""

    id: str
    type: str
    properties: str


class RelationshipRow(msgspec.Struct, frozen=True):
    """A graph relationship (``properties`` the JSON object as text)."""

    id: str
    source: str
    target: str
    type: str
    properties: str


class TaskRow(msgspec.Struct, frozen=True):
    """A task of a task list."""

    id: str
    title: str
    status: str
    ord: int
    retry_count: int
    note: str


class TaskListRow(msgspec.Struct, frozen=True):
    """A task list with its tasks (sorted by id)."""

    id: str
    conversation_id: str
    agent_id: str
    agent_label: str
    parent_agent_id: str | None
    max_retries: int
    created_at: int
    updated_at: int
    tasks: tuple[TaskRow, ...]


class PoolEntryRow(msgspec.Struct, frozen=True):
    """One entry of a context queue's or pool's log; ``seq`` is the source's (remapped on load),
    ``vector`` the description's (model, float32 embedding) when it has one, ``ttl_ms`` and
    ``expires_at`` its TTL (a pool item's; an expired one travels as it is: the log's meaning)."""

    seq: int
    key: str | None
    ord: int
    removed: bool
    description: str | None
    content: bytes
    extra: bytes | None
    vector: tuple[str, bytes] | None
    ttl_ms: int | None = None
    expires_at: int | None = None


class PoolRow(msgspec.Struct, frozen=True):
    """A context queue or pool by name, with its own entries in log order. ``parent`` is the
    parent's name; ``fork_seq`` and ``base_seq`` are points in the source's log (remapped)."""

    name: str
    kind: str
    parent: str | None
    fork_seq: int | None
    base_seq: int
    lim: int | None
    tags: str
    hooks: str
    extra: str
    size: int
    version: int
    created_at: int
    updated_at: int
    entries: tuple[PoolEntryRow, ...]


class RunRow(msgspec.Struct, frozen=True):
    """An agent run (ravi's run id in a thread) and the messages it wrote, as (session id,
    position) of each session's transcript that shows them, sorted."""

    run_id: str
    thread_id: str
    created_at: int
    tags: tuple[tuple[str, int], ...]


class StateRow(msgspec.Struct, frozen=True):
    """An agent's saved resumable state, by the id of the session it belongs to."""

    session_id: str
    type: str
    state: str
    subagents: str
    saved_at: int


class ConversationRow(msgspec.Struct, frozen=True):
    """A framework conversation's record (its own JSON, opaque), its revision and its head."""

    id: str
    scope: str | None
    revision: str
    updated_us: int
    head_session: str | None
    head_position: int | None
    record: bytes


class ConversationEntryRow(msgspec.Struct, frozen=True):
    """Where a framework conversation's entry is: the session and position of its message."""

    id: str
    session_id: str
    position: int


class TurnRow(msgspec.Struct, frozen=True):
    """A user turn of a session as the session reads it (``message_turns``): the position of
    its user message, its number, its time (ms: usage recorded for the turn names it) and its
    content as JSON text."""

    session_id: str
    position: int
    turn: int
    created_at: int
    content: str


_ANY_JSON = msgspec.json.Decoder()


def canonical_json(text: str | bytes) -> str:
    """``text``'s JSON value with keys sorted and no spaces: the same value reads the same from
    SQLite's text and PostgreSQL's ``jsonb`` (which reorders keys), so copies compare equal."""
    return msgspec.json.encode(_ANY_JSON.decode(text), order="sorted").decode()
