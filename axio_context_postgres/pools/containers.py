"""``PostgresContextQueue`` and ``PostgresContextPool``: the queue and pool written once in
:mod:`axio_context.pools.sql`, on a connection pool from :func:`axio_context_postgres.connect`
(each change one transaction that locks the container's row, so writers on many hosts take
turns and none loses another's update), and the command line's ``list_pools`` and ``show_pool``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Generic, TypeVar, cast

from axio_context.embeddings import Embedder
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.pools.sql import PoolInfo, PoolView, SQLContextPool, SQLContextQueue
from axio_context.pools.sql import listing as shared

from ..connection import Pool
from ..runner import PostgresRunner
from .dialect import POSTGRES_POOLS

#: How errors name where they happened.
WHERE: Final = "PostgreSQL context pool"

__all__ = ["PostgresContextPool", "PostgresContextQueue", "list_pools", "show_pool"]

T = TypeVar("T")


class PostgresContextQueue(SQLContextQueue[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextQueue` in PostgreSQL; make one with :meth:`open`."""

    @classmethod
    async def open(
        cls,
        pool: Pool,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        content_type: Any = Any,
        create: bool = True,
    ) -> PostgresContextQueue[Any]:
        """The queue ``name`` in the database of ``pool`` (from
        :func:`axio_context_postgres.connect`), created with ``limit`` and ``tags`` when missing;
        its content is decoded as ``content_type`` (msgspec's conversion)."""
        return await cls._open(
            PostgresRunner(pool, WHERE), POSTGRES_POOLS, name, limit, tags, content_type, create
        )

    @classmethod
    async def from_dict(
        cls, pool: Pool, name: str, data: Mapping[str, Any], *, content_type: Any = Any
    ) -> PostgresContextQueue[Any]:
        """Store :meth:`to_dict`'s output as a new queue ``name`` in one transaction: no hook
        fires, hooks resolved by name (UnregisteredHookError), unknown keys kept whole."""
        return await cls._from_dict(PostgresRunner(pool, WHERE), POSTGRES_POOLS, name, data, content_type)

    @property
    def pool(self) -> Pool:
        """The connection pool it works on (the caller's, who closes it)."""
        return cast(PostgresRunner, self._runner).pool


class PostgresContextPool(SQLContextPool[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextPool` in PostgreSQL; make one with
    :meth:`open`. ``select`` ranks by ``tsvector`` and, with an embedder, by pgvector."""

    @classmethod
    async def open(
        cls,
        pool: Pool,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
        create: bool = True,
        ttl: TTLConfig = NO_TTL,
    ) -> PostgresContextPool[Any]:
        """The pool ``name`` in the database of ``pool``, created with ``limit`` and ``tags``
        when missing. With an ``embedder``, each description is embedded as it is added and
        :meth:`select` ranks by meaning as well as by words. ``ttl``: the pool's expiry (a
        default TTL for items added without one, and whether ``select`` refreshes them)."""
        return await cls._open(
            PostgresRunner(pool, WHERE),
            POSTGRES_POOLS,
            name,
            limit,
            tags,
            embedder,
            content_type,
            create,
            ttl,
        )

    @classmethod
    async def from_dict(
        cls,
        pool: Pool,
        name: str,
        data: Mapping[str, Any],
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
        ttl: TTLConfig = NO_TTL,
    ) -> PostgresContextPool[Any]:
        """Store :meth:`to_dict`'s output as a new pool ``name`` in one transaction, without
        hooks or eviction; hooks resolved by name (UnregisteredHookError); unknown keys kept."""
        return await cls._from_dict(
            PostgresRunner(pool, WHERE), POSTGRES_POOLS, name, data, embedder, content_type, ttl
        )

    @property
    def pool(self) -> Pool:
        """The connection pool it works on (the caller's, who closes it)."""
        return cast(PostgresRunner, self._runner).pool


async def list_pools(pool: Pool, kind: str | None = None) -> list[PoolInfo]:
    """Every queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
    return await shared.list_pools(PostgresRunner(pool, WHERE), POSTGRES_POOLS, kind)


async def show_pool(pool: Pool, name: str, *, limit: int | None = None) -> PoolView:
    """The queue or pool ``name`` with its first ``limit`` items (all when None)."""
    return await shared.show_pool(PostgresRunner(pool, WHERE), POSTGRES_POOLS, name, limit=limit)
