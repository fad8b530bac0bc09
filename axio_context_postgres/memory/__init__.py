"""The memory stores (:mod:`axio_context.memory`'s protocols) on PostgreSQL, beside the sessions
in the same database: vector collections with pgvector, blobs, a graph and task boards. Each
takes the pool :func:`axio_context_postgres.connect` opened and passes the same contract suites
as the in-memory and SQLite stores.
"""

from ..connection import Pool
from .blobs import PostgresBlobStore, open_blob_url
from .graph import PostgresGraphStore
from .tasks import PostgresTaskStore
from .vectors import PostgresVectorStore

__all__ = [
    "PostgresBlobStore",
    "PostgresGraphStore",
    "PostgresMemoryStores",
    "PostgresTaskStore",
    "PostgresVectorStore",
    "open_blob_url",
]


class PostgresMemoryStores:
    """The four memory stores on one pool: what ``axio-context memory ...`` calls on a
    PostgreSQL database (:meth:`~axio_context_postgres.database.PostgresDatabase.memory_stores`)."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    def vectors(self) -> PostgresVectorStore:
        return PostgresVectorStore(self._pool)

    def blobs(self) -> PostgresBlobStore:
        return PostgresBlobStore(self._pool)

    def graph(self) -> PostgresGraphStore:
        return PostgresGraphStore(self._pool)

    def tasks(self) -> PostgresTaskStore:
        return PostgresTaskStore(self._pool)
