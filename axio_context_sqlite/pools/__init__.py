"""Context queues and pools kept by name in the database file (pygents' semantics, see
:mod:`axio_context.pools`): every change one transaction, branches copy-on-write like session
forks, content anything msgspec encodes, ``select`` over descriptions. The caller's connection
comes from :func:`axio_context_sqlite.connect`::

    async with connect("agent.db") as conn:
        recent = await SQLiteContextQueue.open(conn, "recent", limit=20)
        docs = await SQLiteContextPool.open(conn, "docs", embedder=HashingEmbedder())
"""

from .listing import PoolInfo, PoolView, list_pools, show_pool
from .pool import SQLiteContextPool
from .queue import SQLiteContextQueue

__all__ = ["PoolInfo", "PoolView", "SQLiteContextPool", "SQLiteContextQueue", "list_pools", "show_pool"]
