"""What is at a database path, found without writing anything: ``axio-context info``.

Which file is in use and why (an argument, ``$AXIO_CONTEXT_DB``, the default), whether it
exists, its size and schema version, this library's version and whether sqlite-vec runs here.
Nothing is created or changed, so it is safe on a mistyped path or someone else's file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec

from axio_context import __version__
from axio_context.errors import AxioContextError

from .paths import db_path
from .store.probe import schema_version_of, sqlite_vec_runs
from .store.schema import SCHEMA_VERSION

__all__ = ["DatabaseInfo", "describe_database"]


class DatabaseInfo(msgspec.Struct, frozen=True):
    """A database path and what is there; ``note`` says why a version is missing or unusable."""

    path: str
    source: str  # "argument", "environment" or "default" (see paths.PathSource)
    exists: bool
    file_bytes: int
    wal_bytes: int
    schema_version: int | None  # None: no file, an empty one, or not a database
    supported_schema_version: int
    library_version: str
    sqlite_vec: bool
    note: str | None = None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def _describe(path: str | Path | None, key: bytes | None = None) -> DatabaseInfo:
    target, source = db_path(path)
    version: int | None = None
    note: str | None = None
    exists = target.exists()
    if not exists:
        note = "no database yet: the first write creates it"
    elif not target.is_file():
        note = "not a file"
    elif _size(target) == 0:
        note = "empty file: nothing stored yet"
    else:
        try:
            version = schema_version_of(target, key)
        except (AxioContextError, OSError) as exc:
            note = str(exc)
        else:
            if version == 0:
                version, note = None, "not an axio-context database (no schema version)"
            elif version < SCHEMA_VERSION:
                note = f"schema version {version} is upgraded to {SCHEMA_VERSION} by the next write"
            elif version > SCHEMA_VERSION:
                note = f"schema version {version} is newer than this axio-context supports"
    return DatabaseInfo(
        path=str(target),
        source=source.value,
        exists=exists,
        file_bytes=_size(target),
        wal_bytes=_size(target.with_name(target.name + "-wal")),
        schema_version=version,
        supported_schema_version=SCHEMA_VERSION,
        library_version=__version__,
        sqlite_vec=sqlite_vec_runs(),
        note=note,
    )


async def describe_database(path: str | Path | None = None, key: bytes | None = None) -> DatabaseInfo:
    """What is at ``path`` (None: the default database), read without creating or writing it;
    ``key``: an encrypted file's (None: the environment's, if any)."""
    return await asyncio.to_thread(_describe, path, key)
