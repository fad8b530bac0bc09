"""The SQLite backend's named errors, and the translation of SQLite's exceptions into them, with
the file they concern."""

from __future__ import annotations

import os

try:
    import resource
except ImportError:  # Windows: no file-size limits to report
    resource = None  # type: ignore[assignment]

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
    "MAX_SESSION_ID",
    "SESSION_ID_MARK",
    "CorruptDatabaseError",
    "DatabaseError",
    "DatabaseLockedError",
    "DatabaseNotFoundError",
    "DatabaseOpenError",
    "EmptyDatabaseError",
    "FileTooLargeError",
    "ForeignDatabaseError",
    "ReadOnlyDatabaseError",
    "SchemaVersionError",
    "SessionIdError",
    "TokenTotalError",
    "translate_error",
]


#: The longest session id (characters) a database accepts for a new or renamed session; enforced
#: by triggers of ``schema.sql`` (version 6), whose messages start with :data:`SESSION_ID_MARK`.
MAX_SESSION_ID = 256
SESSION_ID_MARK = "axio-context: "


class ForeignDatabaseError(DatabaseError):
    """An SQLite file that another application owns (not our application_id, not our schema)."""


class EmptyDatabaseError(DatabaseNotFoundError):
    """The file exists but holds no database yet, and a read-only opening does not create one."""


class FileTooLargeError(DatabaseError):
    """A write would grow a database file past the process's file-size limit (``ulimit -f``)."""


class TokenTotalError(AxioContextError, ValueError):
    """An addition that would take a session's token total below zero or past 2**63-1."""


class SessionIdError(AxioContextError, ValueError):
    """A session id that is not a non-empty string of at most ``MAX_SESSION_ID`` characters."""


def _file_size_limit() -> int | None:
    """The process's file-size limit in bytes, or None when there is none."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _past_size_limit(path: str, limit: int) -> bool:
    """Whether the database file or its WAL is within a page-sized write of ``limit``."""
    for suffix in ("", "-wal", "-journal"):
        try:
            size = os.path.getsize(path + suffix)
        except OSError:
            continue
        if size + 65536 + 24 > limit:  # a page (at most 64 KiB) plus a WAL frame header
            return True
    return False


def translate_error(exc: BaseException, path: str = "") -> BaseException:
    """The named error for a driver exception; programming errors pass through unchanged."""
    if isinstance(exc, AxioContextError):
        return exc
    text = str(exc)
    low = text.lower()
    where = f" ({path})" if path else ""
    if text.startswith(SESSION_ID_MARK):  # schema.sql's trigger on sessions.id
        return SessionIdError(text.removeprefix(SESSION_ID_MARK))
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
        # With SIGXFSZ ignored, a write past RLIMIT_FSIZE fails with EFBIG, which SQLite
        # reports as a plain I/O error: say what it is when the limit explains it.
        limit = _file_size_limit()
        if limit is not None and (not path or _past_size_limit(path, limit)):
            return FileTooLargeError(
                f"file too large{where}: the database reached this process's file-size limit "
                f"of {limit} bytes (ulimit -f)"
            )
        return DatabaseError(f"I/O failure on database{where}: {text}")
    if type(exc).__name__ == "OperationalError":
        return DatabaseError(f"database error{where}: {text}")
    return exc
