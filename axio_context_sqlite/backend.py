"""The SQLite backend as the registry sees it (:mod:`axio_context.backends.registry`): how a path
(or ``sqlite://PATH``) opens, and the handles its stores take, for the bridges. Registered
under the ``sqlite`` scheme of the ``axio_context.backends`` entry point group."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite

from axio_context.backends import AxioImport, DamageChecking, FileUpkeep, OpenDatabase, Where
from axio_context.backends.base import BackendBase

if TYPE_CHECKING:
    from axio_context.testing.backends import ContractFactories
    from axio_context.turns_sql import TurnIndexCalls
    from axio_context.usage_limits import UsageRecorder

from .database import Database, open_database
from .paths import default_db_path
from .store.connection import connect
from .store.context_store import SQLiteContextStore
from .store.conversation_log import SQLiteConversationLog
from .store.driver import Synchronous

__all__ = ["BACKEND", "SQLiteBackend"]


class SQLiteBackend(BackendBase):
    """Opens SQLite database files."""

    name = "sqlite"
    handle_type = aiosqlite.Connection
    store_class = SQLiteContextStore
    log_class = SQLiteConversationLog
    #: It opens encrypted files given a key (SQLCipher, docs/encryption.md).
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
        """``key``: an encrypted file's key (None: ``$AXIO_CONTEXT_KEY`` or its file, if set)."""
        path = None if where is None else Path(where)
        if busy_timeout is None:
            return open_database(path, create=create, readonly=readonly, key=key)
        return open_database(path, create=create, readonly=readonly, busy_timeout=busy_timeout, key=key)

    async def connect(
        self, where: Where, *, synchronous: Synchronous | None = None, key: bytes | str | None = None
    ) -> aiosqlite.Connection:
        """A connection on ``where``; ``synchronous``: its ``PRAGMA synchronous`` (None: NORMAL);
        ``key``: an encrypted file's key (None: from the environment, if set)."""
        if synchronous is None:
            return await connect(Path(where), key=key)
        return await connect(Path(where), synchronous=synchronous, key=key)

    async def convert_keys(self, where: Where, old: bytes | None, new: bytes | None) -> None:
        """Encrypt (``old`` None), decrypt (``new`` None) or re-key the file at ``where``, atomically
        (a new file renamed over it: :mod:`.admin.encryption`), off the event loop."""
        import asyncio

        from .admin.encryption import convert_file

        await asyncio.to_thread(convert_file, Path(where), old, new)

    def _turns_class(self) -> type[TurnIndexCalls[Any]]:
        from .store.turns import SQLiteTurnIndex

        return SQLiteTurnIndex

    def _recorder_class(self) -> type[UsageRecorder]:
        from .usage.recorder import SQLiteUsageRecorder

        return SQLiteUsageRecorder

    async def describe(self, where: Where) -> dict[str, object]:
        return {"database": str(where), "backend": self.name}

    def contract_factories(self, handle: Any, where: Where) -> ContractFactories:
        from .testing import SQLiteFactories  # test code: loaded only by the contract fixture

        return SQLiteFactories(handle, where)

    def default_location(self) -> Path:
        """``$AXIO_CONTEXT_DB`` or ``context.db`` in the user data directory."""
        return default_db_path()


#: The instance the entry point names.
BACKEND = SQLiteBackend()

if TYPE_CHECKING:  # mypy checks the database class against the protocol and its capabilities

    def _conforms(db: Database) -> None:
        _database: OpenDatabase = db
        _upkeep: FileUpkeep = db
        _checking: DamageChecking = db
        _axio: AxioImport = db

    from axio_context.backends import Backend

    _backend: Backend = BACKEND
