"""The two backends the pool contract suites run against: in memory, and one SQLite file."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiosqlite
import msgspec

from axio_context.embeddings import Embedder
from axio_context.pools import ContextPool, ContextQueue
from axio_context_sqlite import connect
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue, show_pool


class InMemoryPools:
    """pygents' in-memory queue and pool."""

    async def queue(self, limit: int, tags: list[str] | None = None) -> ContextQueue[Any]:
        return ContextQueue(limit, tags)

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> ContextPool[Any]:
        return ContextPool(limit, tags, embedder=embedder)

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return owner.branch(*args, **kwargs)

    async def queue_from_dict(self, data: Mapping[str, Any]) -> ContextQueue[Any]:
        return ContextQueue.from_dict(data)

    async def pool_from_dict(self, data: Mapping[str, Any]) -> ContextPool[Any]:
        return ContextPool.from_dict(data)

    async def reopen(self, owner: Any) -> Any:
        return owner

    async def shown(self, owner: Any) -> Any:
        return None


class SQLitePools:
    """The persisted queue and pool, all in one database file (a fresh one per test);
    ``reopen`` reads one back on a new connection, as another process would."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conns: list[aiosqlite.Connection] = []
        self._names = (f"c{n}" for n in itertools.count())

    async def conn(self) -> aiosqlite.Connection:
        if not self.conns:
            self.conns.append(await connect(self.path))
        return self.conns[0]

    async def close(self) -> None:
        for c in self.conns:
            await c.close()

    async def queue(self, limit: int, tags: list[str] | None = None) -> SQLiteContextQueue[Any]:
        return await SQLiteContextQueue.open(await self.conn(), next(self._names), limit, tags)

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> SQLiteContextPool[Any]:
        return await SQLiteContextPool.open(
            await self.conn(), next(self._names), limit, tags, embedder=embedder
        )

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return await owner.branch(*args, **kwargs)

    async def queue_from_dict(self, data: Mapping[str, Any]) -> SQLiteContextQueue[Any]:
        return await SQLiteContextQueue.from_dict(await self.conn(), next(self._names), data)

    async def pool_from_dict(self, data: Mapping[str, Any]) -> SQLiteContextPool[Any]:
        return await SQLiteContextPool.from_dict(await self.conn(), next(self._names), data)

    async def reopen(self, owner: Any) -> Any:
        other = await connect(self.path)
        self.conns.append(other)
        kind = SQLiteContextQueue if isinstance(owner, SQLiteContextQueue) else SQLiteContextPool
        return await kind.open(other, owner.name)

    async def shown(self, owner: Any) -> Any:
        return msgspec.json.encode(msgspec.to_builtins(await show_pool(await self.conn(), owner.name)))
