"""pydantic-ai's ``ConversationStore`` over an axio-context database.

Entries are messages (the entry id is the message's ``id``), a history that branches continues in
a fork of the session it leaves (nothing copied), and a conversation's ``scope`` is the project
its sessions are filed under. The record (usage, deferred tool requests, branches, revision) is
stored as pydantic's JSON of ``ConversationRecord``; the revision check, the new entries and the
record are written in one transaction (see :mod:`axio_context_sqlite.store.conversation_log`, and
:mod:`axio_context_postgres.conversation_log` on PostgreSQL), so two writers, in one process or
two, never both save over the same revision.

``delete`` removes the record only: the sessions holding its messages stay (they are the
transcript; ``axio-context delete SESSION`` removes one), and forks of it keep reading them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

import aiosqlite
from pydantic import TypeAdapter
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)

from axio_context.tokens import TokenCounter
from axio_context_sqlite.store.conversation_log import ConversationLog, RevisionConflictError

from .messages import model_message, native_message

if TYPE_CHECKING:
    from axio_context_postgres import Pool
    from axio_context_postgres.conversation_log import PostgresConversationLog

__all__ = ["ADAPTER", "AxioConversationStore"]

#: The name this adapter records in the metadata of the sessions it writes.
ADAPTER: Final = "pydantic-ai"

_RECORD: Final = TypeAdapter(ConversationRecord)


def _microseconds(when: datetime) -> int:
    """``when`` as microseconds since the epoch (a naive time taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - _EPOCH) // timedelta(microseconds=1)


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class AxioConversationStore(ConversationStore):
    """A :class:`~pydantic_ai.conversation_store.ConversationStore` in an axio-context database.

    ``conn``: an open SQLite connection (:func:`axio_context_sqlite.connect`) or a PostgreSQL
    pool (:func:`axio_context_postgres.connect`), owned by the caller. ``project``: the project
    of sessions saved without a scope (None: the current directory).
    """

    def __init__(
        self,
        conn: aiosqlite.Connection | Pool,
        *,
        project: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._log: ConversationLog | PostgresConversationLog
        if isinstance(conn, aiosqlite.Connection):
            self._log = ConversationLog(conn, adapter=ADAPTER, project=project, token_counter=token_counter)
        else:  # imported here: the postgres extra is needed only by those who use it
            from axio_context_postgres.conversation_log import PostgresConversationLog

            self._log = PostgresConversationLog(
                conn, adapter=ADAPTER, project=project, token_counter=token_counter
            )

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        data = await self._log.read_record(conversation_id)
        return None if data is None else _RECORD.validate_json(data)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        return [_RECORD.validate_json(data) for data in await self._log.read_records(scope, limit)]

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Check the revision, append the entries and store the record in one transaction."""
        entries = [(e.id, e.parent_id, native_message(e.message, entry_id=e.id)) for e in new_entries]
        try:
            await self._log.write(
                record.conversation_id,
                record=_RECORD.dump_json(record),
                revision=record.revision,
                updated_us=_microseconds(record.updated_at),
                scope=record.scope,
                head_id=record.head_id,
                expected_revision=expected_revision,
                entries=entries,
            )
        except RevisionConflictError:
            raise ConversationConflict(record.conversation_id) from None

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete the record; the sessions holding its messages stay (see the module's docstring)."""
        try:
            await self._log.delete(conversation_id, expected_revision)
        except RevisionConflictError:
            raise ConversationConflict(conversation_id) from None

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        parent_id, messages = await self._log.read_line(entry_id, 1)
        return ConversationEntry(id=entry_id, parent_id=parent_id, message=model_message(messages[-1]))

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        """The entries up to ``head_id`` in one read (its last ``limit``, reading only those rows)."""
        if head_id is None or limit == 0:
            return []
        parent_id, messages = await self._log.read_line(head_id, limit)
        out: list[ConversationEntry] = []
        for i, message in enumerate(messages):
            entry_id = message.id if message.id is not None else head_id
            out.append(
                ConversationEntry(
                    id=entry_id, parent_id=parent_id, message=model_message(message, position=i)
                )
            )
            parent_id = entry_id
        return out
