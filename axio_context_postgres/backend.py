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

    def open_database(
        self,
        where: Where | None,
        *,
        create: bool = True,
        readonly: bool = False,
        busy_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[OpenDatabase]:
        if where is None:
            raise DatabaseOpenError("a PostgreSQL database is named by its URL (postgresql://...)")
        return open_database(os.fspath(where))

    async def connect(self, where: Where) -> Pool:
        return await connect(os.fspath(where), min_size=1, max_size=4)

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
