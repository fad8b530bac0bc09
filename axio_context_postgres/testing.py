"""The contract suites' factories on an PostgreSQL database (:mod:`axio_context.testing.backends` asks
for them through :meth:`PostgresBackend.contract_factories`): sessions, stored state, usage,
memory stores, queues and pools, each made the way this backend's users make them. Nothing in
the library imports it but that fixture."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any
from uuid import uuid4

import msgspec

from axio_context.context import ContextStore
from axio_context.embeddings import Embedder
from axio_context.memory.blobs import DEFAULT_MAX_SIZE, BlobStore
from axio_context.messages import Message
from axio_context.state import ResumableState
from axio_context.usage_limits import UsageRecorder

from .connection import Pool, connect
from .memory import PostgresBlobStore, PostgresGraphStore, PostgresTaskStore, PostgresVectorStore
from .pools import PostgresContextPool, PostgresContextQueue, show_pool
from .state import load_state, save_state
from .store import PostgresContextStore
from .usage import PostgresUsageRecorder

__all__ = ["PostgresFactories"]

#: The project the store suites' sessions are filed under; the state and usage suites read
#: theirs under :data:`SUITE_PROJECT`, the project their checks name.
PROJECT = "contract"
SUITE_PROJECT = "p"


class PostgresFactories:
    """Every suite's factory on the database at ``where``, ``conn`` a pool open on it; the pool
    a factory opens besides (a pool read back as another process would) is closed by
    :meth:`close`."""

    def __init__(self, conn: Pool, where: str) -> None:
        self.conn = conn
        self.where = where
        self._opened: list[Pool] = []
        self._names = (f"c{n}" for n in itertools.count())
        self.stores = _Stores(self)
        self.states = _States(self)
        self.recorders = _Recorders(self)
        self.memory = _Memory(self)
        self.pools = _Pools(self)

    async def another(self) -> Pool:
        """A second pool on the same database (closed by :meth:`close`)."""
        conn = await connect(self.where, min_size=1, max_size=2)
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
    def __init__(self, f: PostgresFactories) -> None:
        self.f = f

    async def new(self) -> ContextStore:
        return PostgresContextStore(self.f.conn, uuid4().hex, project=PROJECT)

    async def from_history(self, history: list[Message]) -> ContextStore:
        return await PostgresContextStore.from_history(history, pool=self.f.conn, project=PROJECT)

    async def from_context(self, context: ContextStore) -> ContextStore:
        return await PostgresContextStore.from_context(context, pool=self.f.conn, project=PROJECT)


class _States:
    def __init__(self, f: PostgresFactories) -> None:
        self.f = f

    async def store(self, session_id: str) -> ContextStore:
        return PostgresContextStore(self.f.conn, session_id, project=SUITE_PROJECT)

    async def save(self, store: ContextStore, state: ResumableState) -> None:
        assert isinstance(store, PostgresContextStore)
        await save_state(store, state)

    async def load(self, store: ContextStore) -> ResumableState | None:
        assert isinstance(store, PostgresContextStore)
        return await load_state(store)


class _Recorders:
    def __init__(self, f: PostgresFactories) -> None:
        self.f = f

    async def new(self) -> UsageRecorder:
        return PostgresUsageRecorder(self.f.conn, SUITE_PROJECT)

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        return PostgresContextStore(self.f.conn, session_id, SUITE_PROJECT)


class _Memory:
    """The four stores on the one pool."""

    def __init__(self, f: PostgresFactories) -> None:
        self.f = f

    async def vectors(self, embedder: Embedder | None = None) -> PostgresVectorStore:
        return PostgresVectorStore(self.f.conn, embedder=embedder)

    async def blobs(self, max_size: int = DEFAULT_MAX_SIZE) -> PostgresBlobStore:
        return PostgresBlobStore(self.f.conn, max_size=max_size)

    async def open_url(self, store: BlobStore, url: str) -> tuple[bytes, str]:
        assert isinstance(store, PostgresBlobStore)
        return await store.open_url(url)

    async def graph(self) -> PostgresGraphStore:
        return PostgresGraphStore(self.f.conn)

    async def tasks(self) -> PostgresTaskStore:
        return PostgresTaskStore(self.f.conn)


class _Pools:
    """Queues and pools on the one pool; ``reopen`` reads one back on a second pool, as another
    process would."""

    def __init__(self, f: PostgresFactories) -> None:
        self.f = f

    async def queue(self, limit: int, tags: list[str] | None = None) -> PostgresContextQueue[Any]:
        return await PostgresContextQueue.open(self.f.conn, self.f.name(), limit, tags)

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> PostgresContextPool[Any]:
        return await PostgresContextPool.open(self.f.conn, self.f.name(), limit, tags, embedder=embedder)

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return await owner.branch(*args, **kwargs)

    async def queue_from_dict(self, data: Mapping[str, Any]) -> PostgresContextQueue[Any]:
        return await PostgresContextQueue.from_dict(self.f.conn, self.f.name(), data)

    async def pool_from_dict(self, data: Mapping[str, Any]) -> PostgresContextPool[Any]:
        return await PostgresContextPool.from_dict(self.f.conn, self.f.name(), data)

    async def reopen(self, owner: Any) -> Any:
        kind = PostgresContextQueue if isinstance(owner, PostgresContextQueue) else PostgresContextPool
        return await kind.open(await self.f.another(), owner.name)

    async def shown(self, owner: Any) -> Any:
        return msgspec.json.encode(msgspec.to_builtins(await show_pool(self.f.conn, owner.name)))
