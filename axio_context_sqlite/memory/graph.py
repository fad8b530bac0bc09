"""The graph store in the SQLite file: :class:`SQLiteGraphStore`, ravi's ``GraphStore``, the
shared :class:`~axio_context.memory.graph_sql.SQLGraphStore` on the connection's worker thread."""

from __future__ import annotations

import aiosqlite

from axio_context.memory.graph_sql import SQLGraphStore

from ..store.runner import SQLiteRunner

__all__ = ["SQLiteGraphStore"]


class SQLiteGraphStore(SQLGraphStore):
    """:class:`~axio_context.memory.GraphStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it). Not ``CypherCapable``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        super().__init__(SQLiteRunner(conn))
