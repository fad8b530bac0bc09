"""The agent memory stores in the SQLite file (ravi's protocols, see :mod:`axio_context.memory`):
vector collections, blobs (shared with messages' media), a graph and task boards. Each store
works on a connection from :func:`axio_context_sqlite.connect`, which the caller closes::

    async with connect("agent.db") as conn:
        vectors = SQLiteVectorStore(conn, embedder=HashingEmbedder())
        blobs, graph, tasks = SQLiteBlobStore(conn), SQLiteGraphStore(conn), SQLiteTaskStore(conn)
"""

from .blobs import SQLiteBlobStore, open_blob_url
from .blocks import SQLiteBlockStore
from .graph import SQLiteGraphStore
from .stats import MemoryStats, memory_stats
from .tasks import SQLiteTaskStore
from .vectors import SQLiteVectorStore

__all__ = [
    "MemoryStats",
    "SQLiteBlobStore",
    "SQLiteBlockStore",
    "SQLiteGraphStore",
    "SQLiteTaskStore",
    "SQLiteVectorStore",
    "memory_stats",
    "open_blob_url",
]
