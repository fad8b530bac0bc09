"""The PostgreSQL backend as the registry sees it (:mod:`axio_context.backends.registry`): how a
``postgresql://`` (or ``postgres://``) URL opens, and the pools its stores take, for the
bridges. Registered under both schemes of the ``axio_context.backends`` entry point group."""

from __future__ import annotations

import os
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from axio_context.backends import OpenDatabase, Where
from axio_context.backends.base import BackendBase
from axio_context.errors import DatabaseOpenError

if TYPE_CHECKING:
    from axio_context.testing.backends import ContractFactories
    from axio_context.turns_sql import TurnIndexCalls
    from axio_context.usage_limits import UsageRecorder

from .connection import Pool, connect
from .conversation_log import PostgresConversationLog
from .database import describe, open_database
from .store import PostgresContextStore

__all__ = ["BACKEND", "PostgresBackend"]


class PostgresBackend(BackendBase):
    """Opens PostgreSQL databases by URL."""

    name = "postgresql"
    handle_type = Pool
    store_class = PostgresContextStore
    log_class = PostgresConversationLog
    #: It opens databases given a key, sealing what users wrote on the client (docs/encryption.md).
    encrypts = True

    def open_database(
        self,
        where: Where | None,
        *,
        create: bool = True,
        readonly: bool = False,
        busy_timeout: float | None = None,
        key: bytes | str | None = None,
    ) -> AbstractAsyncContextManager[OpenDatabase]:
        """``key``: the key its data is sealed under (None: ``$AXIO_CONTEXT_KEY`` or its file, if set)."""
        if where is None:
            raise DatabaseOpenError("a PostgreSQL database is named by its URL (postgresql://...)")
        return open_database(os.fspath(where), key=key)

    async def connect(self, where: Where, key: bytes | str | None = None) -> Pool:
        """A pool on ``where`` (``key`` as :meth:`open_database` takes it)."""
        return await connect(os.fspath(where), min_size=1, max_size=4, key=key)

    def _turns_class(self) -> type[TurnIndexCalls[Any]]:
        from .turns import PostgresTurnIndex

        return PostgresTurnIndex

    async def convert_keys(self, where: Where, old: bytes | None, new: bytes | None) -> None:
        """Encrypt (``old`` None), decrypt (``new`` None) or re-key the database at ``where``, in one
        transaction (:mod:`.rekeying`)."""
        from .rekeying import convert_keys

        await convert_keys(os.fspath(where), old, new)

    def _recorder_class(self) -> type[UsageRecorder]:
        from .usage.recorder import PostgresUsageRecorder

        return PostgresUsageRecorder

    async def describe(self, where: Where) -> dict[str, object]:
        return await describe(os.fspath(where))

    def contract_factories(self, handle: Any, where: Where) -> ContractFactories:
        from .testing import PostgresFactories  # test code: loaded only by the contract fixture

        return PostgresFactories(handle, os.fspath(where))


#: The instance the entry points name.
BACKEND = PostgresBackend()

if TYPE_CHECKING:
    from axio_context.backends import Backend

    _backend: Backend = BACKEND
