"""The driver every connection comes from, and the extension it loads.

Many Pythons (pyenv builds, macOS system Python) ship a ``sqlite3`` that cannot load extensions,
so connections are opened through ``sqlean`` (SQLite 3.50 with FTS5, wheels for every major
platform) and handed to aiosqlite through its connector hook; the worker thread opens the
connection and loads sqlite-vec on it. This module is the one place that knows which driver is
used.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal, TypeVar

import sqlean

__all__ = ["MMAP_SIZE", "Synchronous", "sqlite_module", "warn_vec_once"]

T = TypeVar("T")

#: The DB-API module every connection comes from (exceptions included).
sqlite_module: Any = sqlean

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

_vec_warned = False

#: Bytes of the database file read through a memory map (SQLite caps it at its build's maximum).
MMAP_SIZE = 1 << 30


def warn_vec_once(reason: str) -> None:
    global _vec_warned
    if not _vec_warned:
        _vec_warned = True
        warnings.warn(
            f"sqlite-vec is unavailable ({reason}); semantic search falls back to an exact scan",
            RuntimeWarning,
            stacklevel=3,
        )
