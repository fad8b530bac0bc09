"""Facts about a database file read without writing to it: its schema version, and whether
sqlite-vec runs on this machine. For ``axio-context info``, which must never create or change
the file it describes."""

from __future__ import annotations

import contextlib
from pathlib import Path

import sqlean

from axio_context.encryption import key_from_environment

from ..errors import translate_error
from .driver import driver_errors
from .files import connect_raw, remove_side_files, side_files
from .vec import load_sqlite_vec

__all__ = ["schema_version_of", "sqlite_vec_runs"]


def schema_version_of(path: Path, key: bytes | None = None) -> int:
    """The schema version (``PRAGMA user_version``; 0 for a file no schema was written to) of the
    existing database ``path``, opened read-only; a file that is not a database raises
    :class:`~axio_context.errors.CorruptDatabaseError`. ``key``: an encrypted file's (None: the
    environment's, if any); a key that does not fit is its own one-line error."""
    absolute = str(Path(path).absolute())
    tidy = not any(p.exists() for p in side_files(absolute))
    if key is None:
        key = key_from_environment()
    try:
        raw = connect_raw(
            Path(absolute).as_uri() + "?mode=ro", key, path=str(path), uri=True, isolation_level=None
        )
        try:
            return int(raw.execute("PRAGMA user_version").fetchone()[0])
        finally:
            raw.close()
            if tidy:  # reading made the -wal and -shm: none are left
                remove_side_files(absolute, key)
    except driver_errors() as exc:
        raise translate_error(exc, str(path)) from None


def sqlite_vec_runs() -> bool:
    """Whether sqlite-vec loads and answers a KNN query here (on an in-memory database)."""
    raw = sqlean.connect(":memory:")
    with contextlib.closing(raw):
        return load_sqlite_vec(raw)
