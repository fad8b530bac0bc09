"""The in-memory stores the memory contract suites run against (the backends' come from the
library's fixture, :mod:`axio_context.testing.backends`)."""

from __future__ import annotations

from axio_context.embeddings import Embedder
from axio_context.memory import (
    InMemoryFileStore,
    InMemoryGraphStore,
    InMemoryTaskStore,
    InMemoryVectorStore,
)
from axio_context.memory.blobs import DEFAULT_MAX_SIZE, BlobStore


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
