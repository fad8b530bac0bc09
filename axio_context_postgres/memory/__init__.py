"""The memory stores (:mod:`axio_context.memory`'s protocols) on PostgreSQL, beside the sessions
in the same database: vector collections with pgvector, blobs, a graph and task boards. Each
takes the pool :func:`axio_context_postgres.connect` opened and passes the same contract suites
as the in-memory and SQLite stores.
"""

from axio_context.memory.stores_sql import SQLMemoryStores

from .. import writes
from ..connection import Pool
from ..pools.dialect import POSTGRES_POOLS
from ..runner import PostgresRunner
from . import blobs, vectors
from .blobs import PostgresBlobStore, open_blob_url
from .blocks import PostgresBlockStore
from .common import WHERE
from .graph import PostgresGraphStore
from .tasks import PostgresTaskStore
from .vectors import PostgresVectorStore

__all__ = [
    "PostgresBlobStore",
    "PostgresBlockStore",
    "PostgresGraphStore",
    "PostgresMemoryStores",
    "PostgresTaskStore",
    "PostgresVectorStore",
    "open_blob_url",
]


class PostgresMemoryStores(SQLMemoryStores):
    """The four memory stores on one pool: what ``axio-context memory ...`` calls on a
    PostgreSQL database (:meth:`~axio_context_postgres.database.PostgresDatabase.memory_stores`)."""

    def __init__(self, pool: Pool) -> None:
        super().__init__(
            PostgresRunner(pool, WHERE),
            lambda: vectors.STATEMENTS,
            blobs.STATEMENTS,
            writes.delete_session,
            POSTGRES_POOLS,
        )
