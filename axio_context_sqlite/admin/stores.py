"""What a SQLite :class:`~axio_context_sqlite.database.Database` hands out beside its own calls:
a session, the layer stores on its connection, the session tree, the copy side and the browser,
as :class:`axio_context.backends.OpenDatabase` names them for every backend."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import aiosqlite

from axio_context.backends.protocol import Capability
from axio_context.catalog import CatalogCalls
from axio_context.memory.stores_sql import SQLMemoryStores
from axio_context.transcript.exporting import ExportSource

from ..memory import MemoryStats, blobs, memory_stats, vectors
from ..pools import PoolInfo, PoolView, list_pools, show_pool
from ..pools.dialect import SQLITE_POOLS
from ..state import StoredState, load_stored
from ..store.context_store import SQLiteContextStore
from ..store.runner import SQLiteRunner
from ..store.sessions import delete_session
from ..usage import SQLiteUsageRecorder
from .exporting import SQLITE_EXPORT
from .layers import SQLiteLayers

if TYPE_CHECKING:
    from .live import Browsable

__all__ = ["ALL_CAPABILITIES", "DatabaseStores", "SQLiteMemoryStores"]

#: A SQLite file can do every call beyond the common protocol.
ALL_CAPABILITIES = frozenset(Capability)


class SQLiteMemoryStores(SQLMemoryStores):
    """The four memory stores on one connection (what ``axio-context memory ...`` calls)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        super().__init__(
            SQLiteRunner(conn), vectors.Statements, blobs.STATEMENTS, delete_session, SQLITE_POOLS
        )


class DatabaseStores(CatalogCalls):
    """The stores and views a database hands out (see :class:`.database.Database`)."""

    _conn: aiosqlite.Connection
    _path: Path

    @property
    def capabilities(self) -> frozenset[Capability]:
        """Every capability: vacuum, recompress, checkpoint, backup, check, import-axio."""
        return ALL_CAPABILITIES

    def instead(self, capability: Capability) -> str:
        """Never needed here: a SQLite file has every capability."""
        return f"{capability} runs on every SQLite database"

    def store(self, session_id: str, project: str | None = None) -> SQLiteContextStore:
        """One session of this database, on its connection."""
        return SQLiteContextStore(self._conn, session_id, project=project)

    def memory_stores(self) -> SQLiteMemoryStores:
        """The memory stores (vectors, blobs, graph, tasks) in this file, on its connection."""
        return SQLiteMemoryStores(self._conn)

    async def memory_stats(self) -> MemoryStats:
        """What the memory stores hold, for ``stats``."""
        return await memory_stats(self._conn)

    def usage_recorder(self) -> SQLiteUsageRecorder:
        """The usage recorder of this file (rows, rollups, session token totals)."""
        return SQLiteUsageRecorder(self._conn)

    async def list_pools(self, kind: str | None = None) -> list[PoolInfo]:
        """Every context queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
        return await list_pools(self._conn, kind)

    async def show_pool(self, name: str, *, limit: int) -> PoolView:
        """The queue or pool ``name`` with its first ``limit`` items."""
        return await show_pool(self._conn, name, limit=limit)

    def _catalog_runner(self) -> SQLiteRunner:
        return SQLiteRunner(self._conn)

    def _export_source(self) -> ExportSource:
        return SQLITE_EXPORT

    async def load_stored(self, session_id: str) -> StoredState | None:
        """The agent state saved with a session, as stored (the ``state`` command's view)."""
        return await load_stored(SQLiteContextStore(self._conn, session_id, project=""))

    def layers(self) -> SQLiteLayers:
        """The layers beside the sessions, as ``copy`` dumps and loads them."""
        return SQLiteLayers(self._conn)

    def browser(self) -> Browsable:
        """This database as the browser reads it: itself."""
        return self  # type: ignore[return-value]  # Database mixes in DatabaseLive
