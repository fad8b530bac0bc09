"""pydantic-ai's ``ConversationStore`` over an axio-context database.

Entries are messages (the entry id is the message's ``id``), a history that branches continues in
a fork of the session it leaves (nothing copied), and a conversation's ``scope`` is the project
its sessions are filed under. The record (usage, deferred tool requests, branches, revision) is
stored as pydantic's JSON of ``ConversationRecord``; the revision check, the new entries and the
record are written in one transaction (the backend's :class:`~axio_context.conversation_log.ConversationLog`,
which the registry hands out for the connection or pool given), so two writers, in one process or
two, never both save over the same revision.

The store takes an open connection or pool (the caller's to close), or a path or URL, which it
opens through the registry (:mod:`axio_context.backends.registry`) on first use and closes in
:meth:`AxioConversationStore.close` (or at the end of ``async with``).

``delete`` removes the record only: the sessions holding its messages stay (they are the
transcript; ``axio-context delete SESSION`` removes one), and forks of it keep reading them.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Final, Self

from pydantic import TypeAdapter
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)

from axio_context.backends import backend_for, backend_of, connect
from axio_context.conversation_log import ConversationLog, RevisionConflictError
from axio_context.errors import StoreClosedError
from axio_context.tokens import TokenCounter

from .messages import model_message, native_message

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

    ``conn``: an open connection or pool of any registered backend (an SQLite connection from
    :func:`axio_context_sqlite.connect`, a PostgreSQL pool from :func:`axio_context_postgres.connect`),
    owned by the caller; or a path or URL (``"chat.db"``, ``postgresql://...``), opened through
    the registry on first use and closed by :meth:`close`. Anything else is a ``TypeError`` here,
    not on first use. ``project``: the project of sessions saved without a scope (None: the
    current directory).
    """

    def __init__(
        self,
        conn: object,
        *,
        project: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._project = project
        self._token_counter = token_counter
        self._where: str | os.PathLike[str] | None = None
        self._handle: Any = None  # the connection or pool this store opened (None: the caller's)
        self._opening: asyncio.Lock | None = None
        self._closed = False
        self._log_of: ConversationLog | None = None
        if isinstance(conn, str | os.PathLike):
            backend_for(conn)  # an unknown scheme or a missing extra: one line here, not on first use
            self._where = conn
        else:
            self._log_of = self._log_on(conn)  # TypeError at once for what no backend owns

    def _log_on(self, handle: object) -> ConversationLog:
        return backend_of(handle).conversation_log(
            handle, adapter=ADAPTER, project=self._project, token_counter=self._token_counter
        )

    async def _log(self) -> ConversationLog:
        """The conversation log, opening the path or URL given on first use."""
        if self._closed:
            raise StoreClosedError(f"{type(self).__name__} is closed")
        if self._log_of is None:
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:
                if self._log_of is None:
                    assert self._where is not None
                    handle = await connect(self._where)
                    self._handle = handle
                    self._log_of = self._log_on(handle)
        return self._log_of

    async def close(self) -> None:
        """Close the database this store opened from a path or URL (a connection or pool given to
        it stays open: its caller closes it); later calls raise
        :class:`~axio_context.errors.StoreClosedError`."""
        self._closed = True
        handle, self._handle = self._handle, None
        if handle is not None:
            await handle.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        log = await self._log()
        data = await log.read_record(conversation_id)
        return None if data is None else _RECORD.validate_json(data)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        log = await self._log()
        return [_RECORD.validate_json(data) for data in await log.read_records(scope, limit)]

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Check the revision, append the entries and store the record in one transaction."""
        entries = [(e.id, e.parent_id, native_message(e.message, entry_id=e.id)) for e in new_entries]
        log = await self._log()
        try:
            await log.write(
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
        log = await self._log()
        try:
            await log.delete(conversation_id, expected_revision)
        except RevisionConflictError:
            raise ConversationConflict(conversation_id) from None

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        log = await self._log()
        parent_id, messages = await log.read_line(entry_id, 1)
        return ConversationEntry(id=entry_id, parent_id=parent_id, message=model_message(messages[-1]))

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        """The entries up to ``head_id`` in one read (its last ``limit``, reading only those rows)."""
        if head_id is None or limit == 0:
            return []
        log = await self._log()
        parent_id, messages = await log.read_line(head_id, limit)
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
