"""The two backends the memory contract suites run against: in memory, and one SQLite file."""

from __future__ import annotations

from pathlib import Path

import aiosqlite

from axio_context.embeddings import Embedder
from axio_context.memory import (
    InMemoryFileStore,
    InMemoryGraphStore,
    InMemoryTaskStore,
    InMemoryVectorStore,
)
from axio_context.memory.blobs import DEFAULT_MAX_SIZE, BlobStore
from axio_context_sqlite import connect
from axio_context_sqlite.memory import (
    SQLiteBlobStore,
    SQLiteGraphStore,
    SQLiteTaskStore,
    SQLiteVectorStore,
    open_blob_url,
)


class InMemoryFactory:
    """ravi's in-memory stores."""

    async def vectors(self, embedder: Embedder | None = None) -> InMemoryVectorStore:
        return InMemoryVectorStore(embedder)

    async def blobs(self, max_size: int = DEFAULT_MAX_SIZE) -> InMemoryFileStore:
        return InMemoryFileStore(max_size=max_size)

    async def open_url(self, store: BlobStore, url: str) -> tuple[bytes, str]:
        assert isinstance(store, InMemoryFileStore)
        return await store.open_url(url)

    async def graph(self) -> InMemoryGraphStore:
        return InMemoryGraphStore()

    async def tasks(self) -> InMemoryTaskStore:
        return InMemoryTaskStore()


class SQLiteFactory:
    """The SQLite stores, all in one database file (a fresh one per test)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conns: list[aiosqlite.Connection] = []

    async def conn(self) -> aiosqlite.Connection:
        c = await connect(self.path)
        self.conns.append(c)
        return c

    async def close(self) -> None:
        for c in self.conns:
            await c.close()

    async def vectors(self, embedder: Embedder | None = None) -> SQLiteVectorStore:
        return SQLiteVectorStore(await self.conn(), embedder=embedder)

    async def blobs(self, max_size: int = DEFAULT_MAX_SIZE) -> SQLiteBlobStore:
        return SQLiteBlobStore(await self.conn(), max_size=max_size)

    async def open_url(self, store: BlobStore, url: str) -> tuple[bytes, str]:
        return await open_blob_url(url)

    async def graph(self) -> SQLiteGraphStore:
        return SQLiteGraphStore(await self.conn())

    async def tasks(self) -> SQLiteTaskStore:
        return SQLiteTaskStore(await self.conn())
