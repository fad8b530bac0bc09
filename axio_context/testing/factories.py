"""The contract suites' factories written once for every backend: each backend gives a
:class:`Kit` (how its users open a session, a recorder, a memory store, a queue or pool, a
second connection), and :class:`KitFactories` makes every suite's objects from it the same way
(:meth:`axio_context.backends.Backend.contract_factories` returns one, typed as the
:class:`ContractFactories` the suites' fixture takes)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, Protocol
from uuid import uuid4

import msgspec

from axio_context.context import ContextStore
from axio_context.embeddings import Embedder
from axio_context.memory.blobs import DEFAULT_MAX_SIZE, BlobStore
from axio_context.messages import Message
from axio_context.state import ResumableState
from axio_context.usage_limits import UsageRecorder

from ..expiry import TTLConfig
from ..memory.testing.expiry import ExpiringFactory
from ..memory.testing.factory import MemoryFactory
from ..pools.testing.factory import PoolFactory
from ..state.contract import StateFactory
from ..usage_limits.contract import RecorderFactory
from .samples import StoreFactory

__all__ = ["PROJECT", "SUITE_PROJECT", "ContractFactories", "Kit", "KitFactories"]

#: The project the store suites' sessions are filed under; the state and usage suites read
#: theirs under :data:`SUITE_PROJECT`, the project their checks name.
PROJECT = "contract"
SUITE_PROJECT = "p"


class ContractFactories(Protocol):
    """What a backend gives the suites for one open database: a factory per suite, made the
    way its users make its stores, and :meth:`close` for what those opened besides."""

    @property
    def stores(self) -> StoreFactory: ...
    @property
    def states(self) -> StateFactory: ...
    @property
    def recorders(self) -> RecorderFactory: ...
    @property
    def memory(self) -> MemoryFactory: ...
    @property
    def pools(self) -> PoolFactory: ...
    @property
    def expiring(self) -> ExpiringFactory: ...

    async def close(self) -> None: ...


class Kit(NamedTuple):
    """What one backend's users call, as the suites need it (``handle``: its connection or pool)."""

    #: ``(handle, session_id, project)`` -> a session of the backend's store.
    store: Callable[[Any, str, str], ContextStore]
    #: ``(history, handle, project)`` and ``(context, handle, project)`` -> a new session.
    from_history: Callable[[list[Message], Any, str], Awaitable[ContextStore]]
    from_context: Callable[[ContextStore, Any, str], Awaitable[ContextStore]]
    save_state: Callable[[Any, ResumableState], Awaitable[None]]
    load_state: Callable[[Any], Awaitable[ResumableState | None]]
    recorder: Callable[[Any, str], UsageRecorder]
    #: The memory stores' classes (each called with a handle, and its keyword options).
    vectors: Callable[..., Any]
    blobs: Callable[..., Any]
    graph: Callable[[Any], Any]
    tasks: Callable[..., Any]
    #: ``(store, url)`` -> what a presigned URL opens to, as this backend's users open one.
    open_url: Callable[[BlobStore, str], Awaitable[tuple[bytes, str]]]
    queue: Any
    pool: Any
    show_pool: Callable[[Any, str], Awaitable[Any]]
    #: ``where`` -> a second connection or pool on the same database.
    another: Callable[[Any], Awaitable[Any]]
    #: Whether each memory store gets a connection of its own (as separate parts of an
    #: application open them on SQLite) or shares the one handle (a server's pool).
    memory_apart: bool


class KitFactories:
    """Every suite's factory on the database at ``where``, ``handle`` open on it; what a factory
    opens besides (another connection or pool) is closed by :meth:`close`."""

    def __init__(self, kit: Kit, handle: Any, where: str | os.PathLike[str]) -> None:
        self.kit = kit
        self.conn = handle
        self.where = where
        self._opened: list[Any] = []
        self._names = (f"c{n}" for n in itertools.count())
        self.stores = _Stores(self)
        self.states = _States(self)
        self.recorders = _Recorders(self)
        self.memory = _Memory(self)
        self.expiring = _Expiring(self.memory)
        self.pools = _Pools(self)

    async def another(self) -> Any:
        """A second connection or pool on the same database (closed by :meth:`close`)."""
        handle = await self.kit.another(self.where)
        self._opened.append(handle)
        return handle

    def name(self) -> str:
        """A fresh queue or pool name."""
        return next(self._names)

    async def close(self) -> None:
        """Close what the factories opened besides the handle."""
        for handle in self._opened:
            await handle.close()
        self._opened.clear()


class _Stores:
    def __init__(self, f: KitFactories) -> None:
        self.f = f

    async def new(self) -> ContextStore:
        return self.f.kit.store(self.f.conn, uuid4().hex, PROJECT)

    async def from_history(self, history: list[Message]) -> ContextStore:
        return await self.f.kit.from_history(history, self.f.conn, PROJECT)

    async def from_context(self, context: ContextStore) -> ContextStore:
        return await self.f.kit.from_context(context, self.f.conn, PROJECT)


class _States:
    def __init__(self, f: KitFactories) -> None:
        self.f = f

    async def store(self, session_id: str) -> ContextStore:
        return self.f.kit.store(self.f.conn, session_id, SUITE_PROJECT)

    async def save(self, store: ContextStore, state: ResumableState) -> None:
        await self.f.kit.save_state(store, state)

    async def load(self, store: ContextStore) -> ResumableState | None:
        return await self.f.kit.load_state(store)


class _Recorders:
    def __init__(self, f: KitFactories) -> None:
        self.f = f

    async def new(self) -> UsageRecorder:
        return self.f.kit.recorder(self.f.conn, SUITE_PROJECT)

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        return self.f.kit.store(self.f.conn, session_id, SUITE_PROJECT)


class _Memory:
    def __init__(self, f: KitFactories) -> None:
        self.f = f

    async def _handle(self) -> Any:
        return await self.f.another() if self.f.kit.memory_apart else self.f.conn

    async def vectors(self, embedder: Embedder | None = None) -> Any:
        return self.f.kit.vectors(await self._handle(), embedder=embedder)

    async def blobs(self, max_size: int = DEFAULT_MAX_SIZE) -> Any:
        return self.f.kit.blobs(await self._handle(), max_size=max_size)

    async def open_url(self, store: BlobStore, url: str) -> tuple[bytes, str]:
        return await self.f.kit.open_url(store, url)

    async def graph(self) -> Any:
        return self.f.kit.graph(await self._handle())

    async def tasks(self) -> Any:
        return self.f.kit.tasks(await self._handle())


class _Expiring:
    """The vector, blob and task stores with an expiry (the expiry suite's factory)."""

    def __init__(self, memory: _Memory) -> None:
        self.m = memory

    async def vectors(self, ttl: TTLConfig) -> Any:
        return self.m.f.kit.vectors(await self.m._handle(), ttl=ttl)

    async def blobs(self, ttl: TTLConfig) -> Any:
        return self.m.f.kit.blobs(await self.m._handle(), ttl=ttl)

    async def tasks(self, ttl: TTLConfig) -> Any:
        return self.m.f.kit.tasks(await self.m._handle(), ttl=ttl)


class _Pools:
    """Queues and pools on the one handle; ``reopen`` reads one back on another, as another
    process would."""

    def __init__(self, f: KitFactories) -> None:
        self.f = f

    async def queue(self, limit: int, tags: list[str] | None = None) -> Any:
        return await self.f.kit.queue.open(self.f.conn, self.f.name(), limit, tags)

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> Any:
        return await self.f.kit.pool.open(self.f.conn, self.f.name(), limit, tags, embedder=embedder)

    async def expiring_pool(self, ttl: TTLConfig, limit: int | None = None) -> Any:
        return await self.f.kit.pool.open(self.f.conn, self.f.name(), limit, ttl=ttl)

    async def expiring_from_dict(self, data: Mapping[str, Any], ttl: TTLConfig) -> Any:
        return await self.f.kit.pool.from_dict(self.f.conn, self.f.name(), data, ttl=ttl)

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return await owner.branch(*args, **kwargs)

    async def queue_from_dict(self, data: Mapping[str, Any]) -> Any:
        return await self.f.kit.queue.from_dict(self.f.conn, self.f.name(), data)

    async def pool_from_dict(self, data: Mapping[str, Any]) -> Any:
        return await self.f.kit.pool.from_dict(self.f.conn, self.f.name(), data)

    async def reopen(self, owner: Any) -> Any:
        kind = self.f.kit.queue if isinstance(owner, self.f.kit.queue) else self.f.kit.pool
        return await kind.open(await self.f.another(), owner.name)

    async def shown(self, owner: Any) -> Any:
        return msgspec.json.encode(msgspec.to_builtins(await self.f.kit.show_pool(self.f.conn, owner.name)))
