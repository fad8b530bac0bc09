"""Context queues and pools kept by name in PostgreSQL (pygents' semantics, see
:mod:`axio_context.pools`; the logic is :mod:`axio_context.pools.sql`, shared with SQLite, and
so are the contract suites): every change one transaction locking its container's row, branches
copy-on-write (made synchronously, written on first use), content anything msgspec encodes,
``select`` over descriptions (``tsvector``, pgvector). The pool of connections comes from
:func:`axio_context_postgres.connect`::

    pool = await connect("postgresql://me@db/agents")
    recent = await PostgresContextQueue.open(pool, "recent", limit=20)
    docs = await PostgresContextPool.open(pool, "docs", embedder=HashingEmbedder())
"""

from .containers import PostgresContextPool, PostgresContextQueue, list_pools, show_pool

__all__ = ["PostgresContextPool", "PostgresContextQueue", "list_pools", "show_pool"]
