"""How the contract suites make the stores of one backend."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Protocol

from ...embeddings import Embedder
from ..blobs import DEFAULT_MAX_SIZE, BlobStore
from ..graph import GraphStore
from ..tasks import TaskStore
from ..vectors import VectorStore

__all__ = ["MemoryFactory", "TinyEmbedder"]


class MemoryFactory(Protocol):
    """Fresh, empty stores of one backend (each call may share one database)."""

    async def vectors(self, embedder: Embedder | None = None) -> VectorStore:
        """A vector store with this embedder (or none)."""
        ...

    async def blobs(self, max_size: int = DEFAULT_MAX_SIZE) -> BlobStore:
        """A blob store taking blobs up to ``max_size`` bytes."""
        ...

    async def open_url(self, store: BlobStore, url: str) -> tuple[bytes, str]:
        """Open a URL ``store.presign_url`` gave, the way this backend documents."""
        ...

    async def graph(self) -> GraphStore:
        """A graph store."""
        ...

    async def tasks(self) -> TaskStore:
        """A task store."""
        ...


class TinyEmbedder:
    """A deterministic 4-d embedder for the suites: counts of the letters a, b, c, d."""

    def __init__(self, model: str = "tiny-abcd") -> None:
        self._model = model
        self.calls = 0

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return 4

    async def embed(self, texts: Sequence[str]) -> list[array[float]]:
        self.calls += 1
        return [array("f", [float(t.count(ch)) for ch in "abcd"]) for t in texts]
