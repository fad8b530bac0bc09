"""``SQLiteContextQueue`` and ``SQLiteContextPool``: the queue and pool written once in
:mod:`axio_context.pools.sql`, on a connection from :func:`axio_context_sqlite.connect` (each
change one transaction on its worker thread), and the command line's ``list_pools`` and
``show_pool``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar, cast

import aiosqlite

from axio_context.embeddings import Embedder
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.pools.sql import PoolInfo, PoolView, SQLContextPool, SQLContextQueue
from axio_context.pools.sql import listing as shared

from ..store.calls import run
from ..store.indexing import vec_available
from ..store.runner import SQLiteRunner
from .dialect import SQLITE_POOLS

__all__ = ["SQLiteContextPool", "SQLiteContextQueue", "list_pools", "show_pool"]

T = TypeVar("T")


async def _vec_loaded(conn: aiosqlite.Connection) -> None:
    """Load sqlite-vec if the connection's open deferred it: a pool with an embedder asks
    whether its functions exist (``vectors_probe``) to rank in SQL rather than in Python."""
    await run(conn, vec_available)


class SQLiteContextQueue(SQLContextQueue[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextQueue` in an SQLite file; make one with :meth:`open`."""

    @classmethod
    async def open(
        cls,
        conn: aiosqlite.Connection,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        content_type: Any = Any,
        create: bool = True,
    ) -> SQLiteContextQueue[Any]:
        """The queue ``name`` in the database of ``conn`` (from
        :func:`axio_context_sqlite.connect`), created with ``limit`` and ``tags`` when missing;
        its content is decoded as ``content_type`` (msgspec's conversion)."""
        return await cls._open(SQLiteRunner(conn), SQLITE_POOLS, name, limit, tags, content_type, create)

    @classmethod
    async def from_dict(
        cls, conn: aiosqlite.Connection, name: str, data: Mapping[str, Any], *, content_type: Any = Any
    ) -> SQLiteContextQueue[Any]:
        """Store :meth:`to_dict`'s output as a new queue ``name`` in one transaction: no hook
        fires, hooks resolved by name (UnregisteredHookError), unknown keys kept whole."""
        return await cls._from_dict(SQLiteRunner(conn), SQLITE_POOLS, name, data, content_type)

    @property
    def connection(self) -> aiosqlite.Connection:
        """The connection it works on (the caller's, who closes it)."""
        return cast(SQLiteRunner, self._runner).conn


class SQLiteContextPool(SQLContextPool[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextPool` in an SQLite file; make one with
    :meth:`open`. ``select`` ranks by FTS5 and, with an embedder, by sqlite-vec."""

    @classmethod
    async def open(
        cls,
        conn: aiosqlite.Connection,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
        create: bool = True,
        ttl: TTLConfig = NO_TTL,
    ) -> SQLiteContextPool[Any]:
        """The pool ``name`` in the database of ``conn``, created with ``limit`` and ``tags``
        when missing. With an ``embedder``, each description is embedded as it is added and
        :meth:`select` ranks by meaning as well as by words. ``ttl``: the pool's expiry (a
        default TTL for items added without one, and whether ``select`` refreshes them)."""
        if embedder is not None:
            await _vec_loaded(conn)
        return await cls._open(
            SQLiteRunner(conn), SQLITE_POOLS, name, limit, tags, embedder, content_type, create, ttl
        )

    @classmethod
    async def from_dict(
        cls,
        conn: aiosqlite.Connection,
        name: str,
        data: Mapping[str, Any],
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
        ttl: TTLConfig = NO_TTL,
    ) -> SQLiteContextPool[Any]:
        """Store :meth:`to_dict`'s output as a new pool ``name`` in one transaction, without
        hooks or eviction; hooks resolved by name (UnregisteredHookError); unknown keys kept."""
        if embedder is not None:
            await _vec_loaded(conn)
        return await cls._from_dict(SQLiteRunner(conn), SQLITE_POOLS, name, data, embedder, content_type, ttl)

    @property
    def connection(self) -> aiosqlite.Connection:
        """The connection it works on (the caller's, who closes it)."""
        return cast(SQLiteRunner, self._runner).conn


async def list_pools(conn: aiosqlite.Connection, kind: str | None = None) -> list[PoolInfo]:
    """Every queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
    return await shared.list_pools(SQLiteRunner(conn), SQLITE_POOLS, kind)


async def show_pool(conn: aiosqlite.Connection, name: str, *, limit: int | None = None) -> PoolView:
    """The queue or pool ``name`` with its first ``limit`` items (all when None)."""
    return await shared.show_pool(SQLiteRunner(conn), SQLITE_POOLS, name, limit=limit)
