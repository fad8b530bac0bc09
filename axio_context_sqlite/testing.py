"""The contract suites' factories on an SQLite file (:mod:`axio_context.testing.backends` asks
for them through :meth:`SQLiteBackend.contract_factories`): sessions, stored state, usage,
memory stores, queues and pools, each made the way this backend's users make them. Nothing in
the library imports it but that fixture."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from uuid import uuid4

import aiosqlite
import msgspec

from axio_context.context import ContextStore
from axio_context.embeddings import Embedder
from axio_context.memory.blobs import DEFAULT_MAX_SIZE, BlobStore
from axio_context.messages import Message
from axio_context.state import ResumableState
from axio_context.usage_limits import UsageRecorder

from .memory import SQLiteBlobStore, SQLiteGraphStore, SQLiteTaskStore, SQLiteVectorStore, open_blob_url
from .pools import SQLiteContextPool, SQLiteContextQueue, show_pool
from .state import load_state, save_state
from .store.connection import connect
from .store.context_store import SQLiteContextStore
from .usage import SQLiteUsageRecorder

__all__ = ["SQLiteFactories"]

#: The project the store suites' sessions are filed under; the state and usage suites read
#: theirs under :data:`SUITE_PROJECT`, the project their checks name.
PROJECT = "contract"
SUITE_PROJECT = "p"


class SQLiteFactories:
    """Every suite's factory on the database file ``where``, ``conn`` open on it; connections a
    factory opens besides (a store on a connection of its own, a pool read back as another
    process would) are closed by :meth:`close`."""

    def __init__(self, conn: aiosqlite.Connection, where: str | os.PathLike[str]) -> None:
        self.conn = conn
        self.where = Path(where)
        self._opened: list[aiosqlite.Connection] = []
        self._names = (f"c{n}" for n in itertools.count())
        self.stores = _Stores(self)
        self.states = _States(self)
        self.recorders = _Recorders(self)
        self.memory = _Memory(self)
        self.pools = _Pools(self)

    async def another(self) -> aiosqlite.Connection:
        """A second connection on the same file (closed by :meth:`close`)."""
        conn = await connect(self.where)
        self._opened.append(conn)
        return conn

    def name(self) -> str:
        """A fresh queue or pool name."""
        return next(self._names)

    async def close(self) -> None:
        for conn in self._opened:
            await conn.close()
        self._opened.clear()


class _Stores:
    def __init__(self, f: SQLiteFactories) -> None:
        self.f = f

    async def new(self) -> ContextStore:
        return SQLiteContextStore(self.f.conn, uuid4().hex, project=PROJECT)

    async def from_history(self, history: list[Message]) -> ContextStore:
        return await SQLiteContextStore.from_history(history, conn=self.f.conn, project=PROJECT)

    async def from_context(self, context: ContextStore) -> ContextStore:
        return await SQLiteContextStore.from_context(context, conn=self.f.conn, project=PROJECT)


class _States:
    def __init__(self, f: SQLiteFactories) -> None:
        self.f = f

    async def store(self, session_id: str) -> ContextStore:
        return SQLiteContextStore(self.f.conn, session_id, project=SUITE_PROJECT)

    async def save(self, store: ContextStore, state: ResumableState) -> None:
        assert isinstance(store, SQLiteContextStore)
        await save_state(store, state)

    async def load(self, store: ContextStore) -> ResumableState | None:
        assert isinstance(store, SQLiteContextStore)
        return await load_state(store)


class _Recorders:
    def __init__(self, f: SQLiteFactories) -> None:
        self.f = f

    async def new(self) -> UsageRecorder:
        return SQLiteUsageRecorder(self.f.conn, SUITE_PROJECT)

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        return SQLiteContextStore(self.f.conn, session_id, SUITE_PROJECT)


class _Memory:
    """Each store on a connection of its own, as separate parts of an application open them."""

    def __init__(self, f: SQLiteFactories) -> None:
        self.f = f

    async def vectors(self, embedder: Embedder | None = None) -> SQLiteVectorStore:
        return SQLiteVectorStore(await self.f.another(), embedder=embedder)

    async def blobs(self, max_size: int = DEFAULT_MAX_SIZE) -> SQLiteBlobStore:
        return SQLiteBlobStore(await self.f.another(), max_size=max_size)

    async def open_url(self, store: BlobStore, url: str) -> tuple[bytes, str]:
        return await open_blob_url(url)

    async def graph(self) -> SQLiteGraphStore:
        return SQLiteGraphStore(await self.f.another())

    async def tasks(self) -> SQLiteTaskStore:
        return SQLiteTaskStore(await self.f.another())


class _Pools:
    """Queues and pools on the one connection; ``reopen`` reads one back on a new connection,
    as another process would."""

    def __init__(self, f: SQLiteFactories) -> None:
        self.f = f

    async def queue(self, limit: int, tags: list[str] | None = None) -> SQLiteContextQueue[Any]:
        return await SQLiteContextQueue.open(self.f.conn, self.f.name(), limit, tags)

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> SQLiteContextPool[Any]:
        return await SQLiteContextPool.open(self.f.conn, self.f.name(), limit, tags, embedder=embedder)

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return await owner.branch(*args, **kwargs)

    async def queue_from_dict(self, data: Mapping[str, Any]) -> SQLiteContextQueue[Any]:
        return await SQLiteContextQueue.from_dict(self.f.conn, self.f.name(), data)

    async def pool_from_dict(self, data: Mapping[str, Any]) -> SQLiteContextPool[Any]:
        return await SQLiteContextPool.from_dict(self.f.conn, self.f.name(), data)

    async def reopen(self, owner: Any) -> Any:
        kind = SQLiteContextQueue if isinstance(owner, SQLiteContextQueue) else SQLiteContextPool
        return await kind.open(await self.f.another(), owner.name)

    async def shown(self, owner: Any) -> Any:
        return msgspec.json.encode(msgspec.to_builtins(await show_pool(self.f.conn, owner.name)))
