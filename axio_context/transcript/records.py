"""The records both lossless formats carry (msgspec Structs), and the format's name and version."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

import msgspec

from ..blocks import (
    ContentBlock,
)
from ..messages import Message, Role

__all__ = [
    "BLOCKS_VERSION",
    "FORMATS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "SESSIONS_VERSION",
    "CheckpointRecord",
    "FormatName",
    "HeaderFields",
    "MessageRecord",
    "SessionHeader",
    "SessionRecord",
]

#: The ``format`` field of every lossless export.
FORMAT_NAME: Final = "axio-context"
#: The newest version this code reads. Bumped when a reader of the previous version could not
#: read the new files; every older version stays readable.
FORMAT_VERSION: Final = 2
#: What an export of sessions alone says (version 1 readers read it, byte for byte as before).
SESSIONS_VERSION: Final = 1
#: What an export carrying memory blocks says: a version 1 reader would drop (json) or trip over
#: (jsonl) its block records, so it refuses the file by its version instead.
BLOCKS_VERSION: Final = 2

FormatName = Literal["json", "jsonl", "markdown"]
FORMATS: Final[tuple[FormatName, ...]] = ("json", "jsonl", "markdown")


# --- records -------------------------------------------------------------------------------------


class MessageRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One stored message and the time it was written; ``id``, ``timestamp`` and ``metadata``
    (the message's own, see :class:`~axio_context.messages.Message`) are written only when set."""

    role: Role
    content: list[ContentBlock]
    created_at: str
    id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None

    @classmethod
    def of(cls, message: Message, created_at: str) -> MessageRecord:
        """The record of ``message``, stored at ``created_at``."""
        return cls(
            role=message.role,
            content=message.content,
            created_at=created_at,
            id=message.id,
            timestamp=message.timestamp,
            metadata=message.metadata,
        )

    def message(self) -> Message:
        """The message itself (role, content and its optional fields)."""
        return Message(
            role=self.role,
            content=list(self.content),
            id=self.id,
            timestamp=self.timestamp,
            metadata=self.metadata,
        )


class CheckpointRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A compaction checkpoint: ``summary`` stands in for positions ``[0, position)`` in the view."""

    id: int
    position: int
    summary: list[Message] = msgspec.field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    summarizer: str = ""
    created_at: str


class HeaderFields(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    project: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: str
    updated_at: str
    parent_id: str | None = None
    fork_position: int | None = None
    #: Leading messages taken from ``parent_id``'s record earlier in the same export.
    inherited: int = 0
    #: Length of the whole transcript, inherited messages included.
    message_count: int
    input_tokens: int = 0
    output_tokens: int = 0
    #: A subagent's history: the session of the agent that ran it, and the subagent's name there.
    owner_id: str | None = None
    agent_name: str | None = None
    #: An agent's conversation (the runtime layer's): the agent and the caller's thread id.
    agent_id: str | None = None
    thread_id: str | None = None


class SessionHeader(HeaderFields, frozen=True, kw_only=True):
    """A session's fields: everything but its messages."""

    checkpoints: list[CheckpointRecord] = msgspec.field(default_factory=list)


class SessionRecord(SessionHeader, frozen=True, kw_only=True):
    """A session with its own messages (positions ``inherited .. message_count - 1``)."""

    messages: list[MessageRecord] = msgspec.field(default_factory=list)

    def header(self) -> SessionHeader:
        """The record without its messages."""
        fields = {f: getattr(self, f) for f in SessionHeader.__struct_fields__}
        return SessionHeader(**fields)
