"""The memory stores (:mod:`axio_context.memory`'s protocols) on PostgreSQL, beside the sessions
in the same database: vector collections with pgvector, blobs, a graph and task boards. Each
takes the pool :func:`axio_context_postgres.connect` opened and passes the same contract suites
as the in-memory and SQLite stores.
"""

from .blobs import PostgresBlobStore, open_blob_url
from .graph import PostgresGraphStore
from .tasks import PostgresTaskStore
from .vectors import PostgresVectorStore

__all__ = [
    "PostgresBlobStore",
    "PostgresGraphStore",
    "PostgresTaskStore",
    "PostgresVectorStore",
    "open_blob_url",
]
