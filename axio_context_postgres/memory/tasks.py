"""The task store on PostgreSQL: :class:`PostgresTaskStore`, ravi's ``TaskStore``, the shared
:class:`~axio_context.memory.tasks_sql.SQLTaskStore` on an asyncpg pool: row locks and an
advisory lock on a board's key order writers on any number of hosts."""

from __future__ import annotations

from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.memory.tasks_sql import SQLTaskStore

from ..connection import Pool
from ..runner import PostgresRunner
from .common import WHERE

__all__ = ["PostgresTaskStore"]


class PostgresTaskStore(SQLTaskStore):
    """:class:`~axio_context.memory.TaskStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it), safe across processes
    and hosts; ``ttl`` is its boards' expiry."""

    def __init__(self, pool: Pool, *, ttl: TTLConfig = NO_TTL) -> None:
        super().__init__(PostgresRunner(pool, WHERE), ttl=ttl)
