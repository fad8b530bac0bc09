"""A framework's conversations kept as sessions (the pydantic-ai bridge): the contract both
backends' logs keep, and the error a stale write gets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .errors import AxioContextError
from .messages import Message

__all__ = ["ConversationLog", "Entry", "RevisionConflictError"]


class RevisionConflictError(AxioContextError):
    """A conversation's stored revision is not the one a write expected (another writer saved it)."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        super().__init__(f"conversation {conversation_id!r} changed since it was read")


#: One new entry: its id, the id of the entry before it, and its message.
Entry = tuple[str, str | None, Message]


class ConversationLog(Protocol):
    """Conversation records with their entries as messages of sessions, written in one
    transaction with the revision check (SQLite's ``ConversationLog``, PostgreSQL's
    ``PostgresConversationLog``)."""

    async def read_record(self, conversation_id: str) -> bytes | None: ...

    async def read_records(self, scope: str | None = None, limit: int | None = None) -> list[bytes]: ...

    async def write(
        self,
        conversation_id: str,
        *,
        record: bytes,
        revision: str,
        updated_us: int,
        scope: str | None,
        head_id: str | None,
        expected_revision: str | None,
        entries: Sequence[Entry] = (),
    ) -> dict[str, tuple[str, int]]: ...

    async def delete(self, conversation_id: str, expected_revision: str) -> None: ...

    async def fork_at(self, session_id: str, position: int, new_id: str) -> None:
        """A new session of this adapter inheriting the first ``position`` messages of
        ``session_id``, nothing copied; ValueError (nothing written) for a missing or shorter
        session or a taken ``new_id``."""
        ...

    async def read_line(
        self, entry_id: str, limit: int | None = None
    ) -> tuple[str | None, list[Message]]: ...
