"""axio-context-sqlite: the SQLite backend of axio-context, and the ``axio-context`` command line.

``connect(path)`` opens (and creates or upgrades) a database; ``SQLiteContextStore(conn,
session_id, project=None)`` is one session in it, with axio's ContextStore surface.
"""

from .connection import Connection, connect
from .ops import SessionPage
from .schema import SCHEMA_VERSION
from .store import SQLiteContextStore

__all__ = ["SCHEMA_VERSION", "Connection", "SQLiteContextStore", "SessionPage", "connect"]
