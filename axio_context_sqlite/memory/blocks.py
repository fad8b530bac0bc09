"""Memory blocks in the SQLite file: :class:`SQLiteBlockStore`, the shared
:class:`~axio_context.memory_blocks.BlockStore` on the connection's worker thread. Every change
is one ``BEGIN IMMEDIATE`` transaction, so processes sharing the file never lose an update."""

from __future__ import annotations

import aiosqlite

from axio_context.memory_blocks.store import BlockStore

from ..store.runner import SQLiteRunner

__all__ = ["SQLiteBlockStore"]


class SQLiteBlockStore(BlockStore):
    """:class:`~axio_context.memory_blocks.BlockStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        super().__init__(SQLiteRunner(conn))
