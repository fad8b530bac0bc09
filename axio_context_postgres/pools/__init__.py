"""Context queues and pools kept by name in PostgreSQL (pygents' semantics, see
:mod:`axio_context.pools`; the same contract suites as :mod:`axio_context_sqlite.pools`):
every change one transaction locking its container's row, branches copy-on-write, content
anything msgspec encodes, ``select`` over descriptions (``tsvector``, pgvector). The pool of
connections comes from :func:`axio_context_postgres.connect`::

    pool = await connect("postgresql://me@db/agents")
    recent = await PostgresContextQueue.open(pool, "recent", limit=20)
    docs = await PostgresContextPool.open(pool, "docs", embedder=HashingEmbedder())
"""

from .listing import list_pools, show_pool
from .pool import PostgresContextPool
from .queue import PostgresContextQueue

__all__ = ["PostgresContextPool", "PostgresContextQueue", "list_pools", "show_pool"]
