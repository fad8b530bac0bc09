"""The driver every connection comes from, and the extension it loads.

Many Pythons (pyenv builds, macOS system Python) ship a ``sqlite3`` that cannot load extensions,
so connections are opened through ``sqlean`` (SQLite 3.50 with FTS5, wheels for every major
platform) and handed to aiosqlite through its connector hook; the worker thread opens the
connection and loads sqlite-vec on it. An encrypted file is opened through SQLCipher instead
(``sqlcipher3``, :mod:`.cipher`), which has FTS5 and loads sqlite-vec the same way. This module is
the one place that knows which drivers are used.
"""

from __future__ import annotations

import sqlite3 as _stdlib_sqlite3
import sys
import warnings
from typing import Any, Literal, TypeVar

import sqlean

__all__ = ["MMAP_SIZE", "PAGE_SIZE", "Synchronous", "driver_errors", "sqlite_module", "warn_vec_once"]

T = TypeVar("T")

#: The DB-API module every connection comes from (exceptions included).
sqlite_module: Any = sqlean


def driver_errors(kind: str = "Error") -> tuple[type[BaseException], ...]:
    """The exception class ``kind`` (``Error``, ``OperationalError``...) of every driver in use, for
    ``except`` clauses: sqlean's, the standard library's (aiosqlite's own), and SQLCipher's once an
    encrypted file was opened (:mod:`.cipher`)."""
    found: list[type[BaseException]] = [getattr(sqlean, kind), getattr(_stdlib_sqlite3, kind)]
    cipher = sys.modules.get("sqlcipher3")
    if cipher is not None:
        found.append(getattr(cipher, kind))
    return tuple(found)


Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

_vec_warned = False

#: Bytes of the database file read through a memory map (SQLite caps it at its build's maximum).
MMAP_SIZE = 1 << 30

#: The page size a new plain database is made with (one made earlier keeps its own): SQLite's
#: default. Pages of 1,024 bytes made the file after 2,000 appends 240 KiB smaller (every one of
#: the ~80 mostly empty layer tables is at least one page), but the reads through the memory map
#: (MMAP_SIZE) then touched more of the file: importing a 52 MB export peaked 5 MiB higher in
#: resident memory, past tests/cli/test_process.py's streaming bound, so they were not kept.
PAGE_SIZE = 4096


def warn_vec_once(reason: str) -> None:
    global _vec_warned
    if not _vec_warned:
        _vec_warned = True
        warnings.warn(
            f"sqlite-vec is unavailable ({reason}); semantic search falls back to an exact scan",
            RuntimeWarning,
            stacklevel=3,
        )
