"""The four memory stores of one SQL database, on one runner: what ``axio-context memory ...``
and the browser call (:class:`axio_context.backends.MemoryStores`), whichever backend it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from axio_context.catalog.expiry_sql import SessionExpiry
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.memory_blocks.store import BlockStore
from axio_context.pools.sql.dialect import PoolSQL
from axio_context.pools.sql.expiry import SQLPoolExpiry
from axio_context.sql import Runner

from .blobs_sql import BlobStatements, SQLBlobStore
from .expiring import StoreExpiry
from .graph_sql import SQLGraphStore
from .tasks_sql import SQLTaskStore
from .vectors_sql import SQLVectorStore, VectorStatements

__all__ = ["SQLMemoryStores"]


class SQLMemoryStores:
    """Vectors, blobs, graph and tasks on ``runner``; the backend gives how it keeps vectors
    (a fresh statements object per store) and blobs, how it deletes a session (for the sweep
    of expired sessions) and its context pools' statements (for the sweep of expired pool items)."""

    def __init__(
        self,
        runner: Runner,
        vectors: Callable[[], VectorStatements],
        blobs: BlobStatements,
        delete_session: Callable[..., Any] | None = None,
        pools: PoolSQL | None = None,
    ) -> None:
        self._runner = runner
        self._delete_session = delete_session
        self._pools = pools
        self._vectors = vectors
        self._blobs = blobs

    def vectors(self) -> SQLVectorStore:
        """The vector store."""
        return SQLVectorStore(self._runner, self._vectors())

    def blobs(self, *, ttl: TTLConfig = NO_TTL) -> SQLBlobStore:
        """The blob store (``ttl``: its expiry)."""
        return SQLBlobStore(self._runner, self._blobs, ttl=ttl)

    def graph(self) -> SQLGraphStore:
        """The graph store."""
        return SQLGraphStore(self._runner)

    def tasks(self, *, ttl: TTLConfig = NO_TTL) -> SQLTaskStore:
        """The task store (``ttl``: its boards' expiry)."""
        return SQLTaskStore(self._runner, ttl=ttl)

    @property
    def runner(self) -> Runner:
        """The runner these stores share (what ``copy`` carries the items' TTLs with)."""
        return self._runner

    def expiry(self) -> StoreExpiry:
        """The stores whose items may expire (vector documents, blobs, task boards, sessions,
        context pool items), counted and swept together."""
        sessions = None if self._delete_session is None else SessionExpiry(self._runner, self._delete_session)
        pools = None if self._pools is None else SQLPoolExpiry(self._runner, self._pools)
        return StoreExpiry(self.vectors(), self.blobs(), self.tasks(), sessions, pools)

    def blocks(self) -> BlockStore:
        """The memory blocks (:mod:`axio_context.memory_blocks`)."""
        return BlockStore(self._runner)
