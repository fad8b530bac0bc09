"""Turn SQLite's exceptions into this package's named errors, with the file they concern."""

from __future__ import annotations

from axio_context.errors import (
    AxioContextError,
    CorruptDatabaseError,
    DatabaseError,
    DatabaseLockedError,
    DatabaseNotFoundError,
    DatabaseOpenError,
    ReadOnlyDatabaseError,
    SchemaVersionError,
)

__all__ = [
    "CorruptDatabaseError",
    "DatabaseError",
    "DatabaseLockedError",
    "DatabaseNotFoundError",
    "DatabaseOpenError",
    "EmptyDatabaseError",
    "ReadOnlyDatabaseError",
    "SchemaVersionError",
    "translate_error",
]


class EmptyDatabaseError(DatabaseNotFoundError):
    """The file exists but is empty: nothing has been stored in it yet (opening to read keeps it so)."""


def translate_error(exc: BaseException, path: str = "") -> BaseException:
    """The named error for a driver exception; programming errors pass through unchanged."""
    if isinstance(exc, AxioContextError):
        return exc
    text = str(exc)
    low = text.lower()
    where = f" ({path})" if path else ""
    if "database is locked" in low or "database table is locked" in low or "busy" in low:
        return DatabaseLockedError(
            f"database is locked{where}: another connection kept the write lock past the busy timeout"
        )
    if "readonly" in low or "read-only" in low:
        return ReadOnlyDatabaseError(f"cannot write{where}: the database file or its folder is read-only")
    if "unable to open" in low or ("cannot open" in low and "savepoint" not in low):
        return DatabaseOpenError(f"cannot open database{where}: {text}")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return CorruptDatabaseError(f"database is damaged or not a database{where}: {text}")
    if "disk i/o error" in low or "database or disk is full" in low:
        return DatabaseError(f"I/O failure on database{where}: {text}")
    if type(exc).__name__ == "OperationalError":
        return DatabaseError(f"database error{where}: {text}")
    return exc
