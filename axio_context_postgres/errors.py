"""The PostgreSQL backend's named errors; each is one line at the command line.

They derive from :mod:`axio_context.errors`' classes, so code (and the CLI) that handles the
SQLite backend's errors handles these too.
"""

from __future__ import annotations

from axio_context.backends.protocol import UnsupportedCapabilityError
from axio_context.errors import DatabaseError, DatabaseOpenError

__all__ = [
    "AuthenticationError",
    "ConnectionLostError",
    "PostgresURLError",
    "ServerUnavailableError",
    "TextNotStorableError",
    "UnsupportedOnPostgresError",
    "VectorExtensionMissingError",
]


class PostgresURLError(DatabaseOpenError, ValueError):
    """The database URL does not parse as a ``postgresql://`` URL."""


class ServerUnavailableError(DatabaseOpenError):
    """The PostgreSQL server cannot be reached (down, wrong host or port, no socket)."""


class AuthenticationError(DatabaseOpenError):
    """The server refused the user name or password."""


class ConnectionLostError(DatabaseError):
    """The connection dropped mid-statement; the transaction it was in was rolled back."""


class TextNotStorableError(DatabaseError, ValueError):
    """Text PostgreSQL cannot hold (a NUL character, in text or inside JSON); nothing was written."""


class VectorExtensionMissingError(DatabaseError):
    """Semantic search needs pgvector's ``vector`` extension, which this database lacks."""


class UnsupportedOnPostgresError(UnsupportedCapabilityError, NotImplementedError):
    """An operation that exists only for SQLite files (vacuum, backup, recompress, ...)."""
