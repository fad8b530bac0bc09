"""axio-context-sqlite: the SQLite backend of axio-context, and the ``axio-context`` command line.

``connect(path)`` opens (and creates or upgrades) a database; ``SQLiteContextStore(conn,
session_id, project=None)`` is one session in it, with axio's ContextStore surface.
``open_database(path)`` gives a :class:`Database`: every session at once (search, reindex,
export, import, maintenance).
"""

from .database import Database, open_database
from .paths import default_db_path
from .search.engine import IndexStatus, Mode, ReindexReport, SearchHit
from .store.connection import Connection, connect
from .store.context_store import SQLiteContextStore
from .store.listing import SessionPage
from .store.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Connection",
    "Database",
    "IndexStatus",
    "Mode",
    "ReindexReport",
    "SQLiteContextStore",
    "SearchHit",
    "SessionPage",
    "connect",
    "default_db_path",
    "open_database",
]
