"""The graph store on PostgreSQL: :class:`PostgresGraphStore`, ravi's ``GraphStore``, the shared
:class:`~axio_context.memory.graph_sql.SQLGraphStore` on an asyncpg pool. A relationship's ends
are foreign keys with ``ON DELETE CASCADE`` here, so no relationship can point at a missing
entity whatever other writers do."""

from __future__ import annotations

from axio_context.memory.graph_sql import SQLGraphStore

from ..connection import Pool
from ..runner import PostgresRunner
from .common import WHERE

__all__ = ["PostgresGraphStore"]


class PostgresGraphStore(SQLGraphStore):
    """:class:`~axio_context.memory.GraphStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it). Not ``CypherCapable``."""

    def __init__(self, pool: Pool) -> None:
        super().__init__(PostgresRunner(pool, WHERE))
