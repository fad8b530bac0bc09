"""Memory blocks on PostgreSQL: :class:`PostgresBlockStore`, the shared
:class:`~axio_context.memory_blocks.BlockStore` on an asyncpg pool: a write locks the block's
row, so writers on any number of hosts never lose an update."""

from __future__ import annotations

from axio_context.memory_blocks.store import BlockStore

from ..connection import Pool
from ..runner import PostgresRunner
from .common import WHERE

__all__ = ["PostgresBlockStore"]


class PostgresBlockStore(BlockStore):
    """:class:`~axio_context.memory_blocks.BlockStore` in the PostgreSQL database of ``pool``
    (from :func:`axio_context_postgres.connect`; the caller closes it)."""

    def __init__(self, pool: Pool) -> None:
        super().__init__(PostgresRunner(pool, WHERE))
