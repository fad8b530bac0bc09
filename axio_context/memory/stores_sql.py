"""The four memory stores of one SQL database, on one runner: what ``axio-context memory ...``
and the browser call (:class:`axio_context.backends.MemoryStores`), whichever backend it is."""

from __future__ import annotations

from collections.abc import Callable

from axio_context.sql import Runner

from .blobs_sql import BlobStatements, SQLBlobStore
from .graph_sql import SQLGraphStore
from .tasks_sql import SQLTaskStore
from .vectors_sql import SQLVectorStore, VectorStatements

__all__ = ["SQLMemoryStores"]


class SQLMemoryStores:
    """Vectors, blobs, graph and tasks on ``runner``; the backend gives how it keeps vectors
    (a fresh statements object per store) and blobs."""

    def __init__(
        self, runner: Runner, vectors: Callable[[], VectorStatements], blobs: BlobStatements
    ) -> None:
        self._runner = runner
        self._vectors = vectors
        self._blobs = blobs

    def vectors(self) -> SQLVectorStore:
        """The vector store."""
        return SQLVectorStore(self._runner, self._vectors())

    def blobs(self) -> SQLBlobStore:
        """The blob store."""
        return SQLBlobStore(self._runner, self._blobs)

    def graph(self) -> SQLGraphStore:
        """The graph store."""
        return SQLGraphStore(self._runner)

    def tasks(self) -> SQLTaskStore:
        """The task store."""
        return SQLTaskStore(self._runner)
