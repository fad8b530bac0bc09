"""Context queues and pools kept by name in an SQL database, written once for every backend.

The logic (the log of entries, copy-on-write branches written on first use, the catch-up of a
stale copy, ``select``'s fusion, listing and copying) lives here as plans
(:mod:`axio_context.sql`); a backend supplies its runner and a small :class:`PoolSQL` (how it
takes log positions, its text index and its vector ranking), and its ``ContextQueue`` and
``ContextPool`` classes only say how they are opened: ``SQLiteContextQueue.open(conn, ...)``,
``PostgresContextPool.open(pool, ...)``.

- :mod:`.rows`: the row shapes and the item codec; :mod:`.plans`: every operation, over
  :mod:`.chain` (the log a container reads); :mod:`.changes`: a stale writer's catch-up;
  :mod:`.stored`: the process's copy and pending branches; :mod:`.queue`, :mod:`.pool`: the
  classes; :mod:`.expiry`: a pool item's TTL, its refresh and the sweep; :mod:`.selecting`,
  :mod:`.listing`, :mod:`.transfer`: ``select``, the command line's view and ``copy``.
"""

from .dialect import PoolSQL
from .listing import PoolInfo, PoolItem, PoolView, list_pools, show_pool
from .pool import SQLContextPool
from .queue import SQLContextQueue

__all__ = [
    "PoolInfo",
    "PoolItem",
    "PoolSQL",
    "PoolView",
    "SQLContextPool",
    "SQLContextQueue",
    "list_pools",
    "show_pool",
]
