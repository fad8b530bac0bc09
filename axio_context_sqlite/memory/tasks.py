"""The task store in the SQLite file: :class:`SQLiteTaskStore`, ravi's ``TaskStore``, the shared
:class:`~axio_context.memory.tasks_sql.SQLTaskStore` on the connection's worker thread. Every
change is one ``BEGIN IMMEDIATE`` transaction, so processes sharing the file never lose each
other's updates. ``GlobalTaskStore.set(SQLiteTaskStore(conn))`` makes it the process-wide default.
"""

from __future__ import annotations

import aiosqlite

from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.memory.tasks_sql import SQLTaskStore

from ..store.runner import SQLiteRunner

__all__ = ["SQLiteTaskStore"]


class SQLiteTaskStore(SQLTaskStore):
    """:class:`~axio_context.memory.TaskStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it), safe across processes;
    ``ttl`` is its boards' expiry."""

    def __init__(self, conn: aiosqlite.Connection, *, ttl: TTLConfig = NO_TTL) -> None:
        super().__init__(SQLiteRunner(conn), ttl=ttl)
