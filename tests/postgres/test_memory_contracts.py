"""Every memory contract suite (vectors, blobs, graph, tasks) against the PostgreSQL stores, on
the real server the tests start; each test begins with the memory tables emptied."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context.embeddings import Embedder
from axio_context.memory.blobs import DEFAULT_MAX_SIZE, BlobStore
from axio_context.memory.testing import (
    BlobStoreContract,
    GraphStoreContract,
    TaskStoreContract,
    VectorStoreContract,
)
from axio_context_postgres import Pool, connect
from axio_context_postgres.memory import (
    PostgresBlobStore,
    PostgresGraphStore,
    PostgresTaskStore,
    PostgresVectorStore,
)

MEMORY_TABLES = (
    "memory_collections, memory_blob_keys, memory_blob_pieces, memory_blob_data,"
    " graph_relationships, graph_entities, tasks, task_lists"
)


class PostgresFactory:
    """The PostgreSQL stores, all on one pool."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def vectors(self, embedder: Embedder | None = None) -> PostgresVectorStore:
        return PostgresVectorStore(self.pool, embedder=embedder)

    async def blobs(self, max_size: int = DEFAULT_MAX_SIZE) -> PostgresBlobStore:
        return PostgresBlobStore(self.pool, max_size=max_size)

    async def open_url(self, store: BlobStore, url: str) -> tuple[bytes, str]:
        assert isinstance(store, PostgresBlobStore)
        return await store.open_url(url)

    async def graph(self) -> PostgresGraphStore:
        return PostgresGraphStore(self.pool)

    async def tasks(self) -> PostgresTaskStore:
        return PostgresTaskStore(self.pool)


@pytest.fixture
async def pg_factory(pg_url: str) -> AsyncIterator[PostgresFactory]:
    pool = await connect(pg_url, min_size=1, max_size=4)
    try:
        await pool.execute(f"TRUNCATE {MEMORY_TABLES} CASCADE")
        yield PostgresFactory(pool)
    finally:
        await pool.close()


class TestPostgresVectors(VectorStoreContract):
    @pytest.fixture
    def memory(self, pg_factory: PostgresFactory) -> PostgresFactory:
        return pg_factory


class TestPostgresBlobs(BlobStoreContract):
    @pytest.fixture
    def memory(self, pg_factory: PostgresFactory) -> PostgresFactory:
        return pg_factory


class TestPostgresGraph(GraphStoreContract):
    @pytest.fixture
    def memory(self, pg_factory: PostgresFactory) -> PostgresFactory:
        return pg_factory


class TestPostgresTasks(TaskStoreContract):
    @pytest.fixture
    def memory(self, pg_factory: PostgresFactory) -> PostgresFactory:
        return pg_factory
