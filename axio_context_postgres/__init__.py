"""axio-context-postgres: the PostgreSQL (and pgvector) backend of axio-context.

``connect(url)`` opens a pool on a ``postgresql://`` URL (creating or upgrading the schema);
``PostgresContextStore(pool, session_id, project=None)`` is one session in it, with the same
surface as the SQLite store. ``open_database(url)`` gives the whole-database object the command
line uses. Install with ``pip install 'axio-context[postgres]'``.
"""

from .connection import Pool, connect, is_postgres_url
from .errors import (
    AuthenticationError,
    ConnectionLostError,
    PostgresURLError,
    ServerUnavailableError,
    UnsupportedOnPostgresError,
    VectorExtensionMissingError,
)
from .schema import SCHEMA_VERSION
from .store import PostgresContextStore, SessionPage

__all__ = [
    "SCHEMA_VERSION",
    "AuthenticationError",
    "ConnectionLostError",
    "Pool",
    "PostgresContextStore",
    "PostgresURLError",
    "ServerUnavailableError",
    "SessionPage",
    "UnsupportedOnPostgresError",
    "VectorExtensionMissingError",
    "connect",
    "is_postgres_url",
]
