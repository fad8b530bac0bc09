"""Connections this package did not open (plain ``aiosqlite.connect``): checked to be ours and
brought to the current schema on their first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar, cast

import aiosqlite

from axio_context.errors import StoreClosedError

from ..errors import translate_error
from . import packing
from .appending import install_temp_objects
from .driver import driver_errors
from .schema import apply_schema, check_owner, refuse_newer
from .worker import call_in_job

__all__ = ["CLOSED_WORDS", "READY", "adopt", "main_file"]

T = TypeVar("T")

# Connections whose schema is known to be current (ours, or plain aiosqlite ones we prepared).
READY: weakref.WeakSet[aiosqlite.Connection] = weakref.WeakSet()
_PREPARING: weakref.WeakKeyDictionary[aiosqlite.Connection, asyncio.Lock] = weakref.WeakKeyDictionary()


#: The ValueError messages aiosqlite (and :meth:`Connection.check_usable`) give a closed connection.
CLOSED_WORDS: Final = frozenset({"Connection closed", "no active connection"})


def main_file(raw: Any) -> str:
    """The path of the connection's main database file ("" in memory), for error messages."""
    for _, name, file in raw.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file or "")
    return ""


async def adopt(conn: aiosqlite.Connection) -> None:
    """Bring a connection opened with plain ``aiosqlite.connect`` up to the current schema."""
    lock = _PREPARING.setdefault(conn, asyncio.Lock())
    async with lock:
        if conn in READY:
            return

        def prepare(raw: Any) -> None:
            path = main_file(raw)
            check_owner(raw, path)  # before anything writes to it, even the journal mode
            refuse_newer(raw, path)
            with contextlib.suppress(Exception):
                raw.execute("PRAGMA journal_mode = WAL")
            apply_schema(raw, readonly=False, path=path)
            install_temp_objects(raw)
            packing.bind(raw)

        try:
            raw = conn._conn
            execute = cast(Callable[..., Awaitable[None]], conn._execute)
            await execute(call_in_job, raw, prepare, (), {})
        except ValueError as exc:
            if str(exc) not in CLOSED_WORDS:
                raise
            raise StoreClosedError("the database connection is closed") from exc
        except driver_errors() as exc:
            raise translate_error(exc, "") from None
        READY.add(conn)
