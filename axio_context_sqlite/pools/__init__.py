"""Context queues and pools kept by name in the database file (pygents' semantics, see
:mod:`axio_context.pools`; the logic is :mod:`axio_context.pools.sql`, shared with PostgreSQL):
every change one transaction, branches copy-on-write like session forks (made synchronously,
written on first use), content anything msgspec encodes, ``select`` over descriptions (FTS5,
sqlite-vec). The caller's connection comes from :func:`axio_context_sqlite.connect`::

    async with connect("agent.db") as conn:
        recent = await SQLiteContextQueue.open(conn, "recent", limit=20)
        docs = await SQLiteContextPool.open(conn, "docs", embedder=HashingEmbedder())
"""

from axio_context.pools.sql import PoolInfo, PoolView

from .containers import SQLiteContextPool, SQLiteContextQueue, list_pools, show_pool

__all__ = ["PoolInfo", "PoolView", "SQLiteContextPool", "SQLiteContextQueue", "list_pools", "show_pool"]
