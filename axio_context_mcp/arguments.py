"""The arguments each MCP tool takes, as msgspec Structs: one source for the JSON Schema a client
sees in ``tools/list`` and for checking what it sends (an unknown field, a wrong type or a value
out of range is refused before anything runs, with msgspec's one-line message)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from axio_context.memory.vectors import DEFAULT_COLLECTION
from axio_context.search import MAX_K

__all__ = [
    "AddDocuments",
    "ListCollections",
    "ListSessions",
    "NewDocument",
    "SearchCollection",
    "SearchSessions",
    "ShowSession",
]


def _doc(text: str) -> msgspec.Meta:
    return msgspec.Meta(description=text)


Since = Annotated[
    str | None,
    _doc("Only those since: a date (2025-06-01), a time (2025-06-01T14:30) or an age (30m, 12h, 7d)."),
]
Project = Annotated[str | None, _doc("Only sessions of this project (a label, or a path as stored).")]
AgentId = Annotated[str | None, _doc("Only those of this agent.")]
RunId = Annotated[str | None, _doc("Only those of this agent run.")]


class _Args(msgspec.Struct, forbid_unknown_fields=True):
    """Base: arguments a tool refuses when it does not know them."""


class ListSessions(_Args):
    """List sessions, newest first (as `axio-context list-sessions --json`)."""

    project: Project = None
    since: Since = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000, description="At most this many.")] = 50
    sort: Annotated[Literal["updated", "created"], _doc("Newest first by last activity or by creation.")] = (
        "updated"
    )
    agent_id: AgentId = None
    run_id: RunId = None
    cursor: Annotated[str | None, _doc("The next_cursor of the previous page.")] = None


class ShowSession(_Args):
    """One session's transcript (as `axio-context show --json`)."""

    session: Annotated[
        str | None, _doc("Session id or unique prefix (default: the last active session).")
    ] = None
    full: Annotated[bool, _doc("Every message, including those a compaction summarised.")] = False
    last: Annotated[Annotated[int, msgspec.Meta(ge=1)] | None, _doc("Only the last N messages.")] = None
    agent_id: Annotated[
        str | None, _doc("With this agent, `session` is a thread id: that agent's conversation in it.")
    ] = None
    run_id: Annotated[str | None, _doc("Only the messages of this agent run.")] = None


class SearchSessions(_Args):
    """Search every session's messages (as `axio-context search --json`)."""

    query: Annotated[str, msgspec.Meta(min_length=1, description="Words to find (quotes keep a phrase).")]
    mode: Annotated[
        Literal["hybrid", "keyword", "semantic"],
        _doc("keyword: the words; semantic: nearest embeddings; hybrid: both, fused."),
    ] = "hybrid"
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_K, description="At most this many hits.")] = 10
    project: Project = None
    session: Annotated[
        str | None, _doc("Only this session's transcript (id or unique prefix), inherited messages included.")
    ] = None
    role: Annotated[Literal["user", "assistant", "system"] | None, _doc("Only messages of this role.")] = None
    since: Since = None
    raw: Annotated[bool, _doc('The query is FTS5 syntax: AND, OR, NOT, NEAR, "phrases", prefix*.')] = False
    model: Annotated[
        str | None,
        _doc("Embedder for semantic/hybrid: hashing, minilm, minilm-onnx (default: the database's)."),
    ] = None
    agent_id: AgentId = None
    run_id: RunId = None


class ListCollections(_Args):
    """Every vector collection: name, dimension, embedder, documents."""


Filter = Annotated[
    dict[str, Any] | None,
    _doc('Only documents whose metadata matches, e.g. {"kind": "note"} or {"year": {"$gte": 2024}}.'),
]


class SearchCollection(_Args):
    """The documents of a vector collection nearest in meaning to a text."""

    query: Annotated[str, msgspec.Meta(min_length=1, description="The text to find documents near.")]
    collection: Annotated[str, msgspec.Meta(min_length=1, description="The collection.")] = DEFAULT_COLLECTION
    limit: Annotated[int, msgspec.Meta(ge=1, le=100, description="At most this many documents.")] = 5
    filter: Filter = None
    model: Annotated[
        str | None, _doc("Embedder for the query (default: the one the collection records).")
    ] = None


class NewDocument(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A document to add: its id, its text and free JSON metadata."""

    id: Annotated[str, msgspec.Meta(min_length=1)]
    content: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class AddDocuments(_Args):
    """Add documents to a vector collection (embedded here; ids already present are kept as they are)."""

    documents: Annotated[list[NewDocument], msgspec.Meta(min_length=1, max_length=1000)]
    collection: Annotated[str, msgspec.Meta(min_length=1, description="The collection.")] = DEFAULT_COLLECTION
    model: Annotated[
        str | None,
        _doc("Embedder: hashing, minilm, minilm-onnx (default: the collection's, else the database's)."),
    ] = None
