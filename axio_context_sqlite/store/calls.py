"""The call path: :func:`run` hands a function to the connection's worker thread (one thread
hop); :func:`run_inline` runs a short statement on the event loop's thread when the worker is
idle; :func:`run_short` picks between them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar, cast

import aiosqlite

from axio_context.errors import StoreClosedError

from ..errors import translate_error
from .adopting import CLOSED_WORDS, READY, adopt
from .driver import driver_errors
from .worker import Connection, call_in_job

__all__ = ["NOT_RUN", "run", "run_inline", "run_short"]

T = TypeVar("T")


async def run(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(raw_connection, *args)`` on the connection's worker thread: one thread hop.

    Everything ``fn`` does happens before any other queued operation on that connection, so a
    multi-statement transaction inside it is atomic with respect to the rest of the program.
    Database errors come back as this package's named errors.
    """
    if conn not in READY:
        await adopt(conn)
    try:
        # Hand the worker the raw connection, never ``conn``: the worker thread keeps its last
        # job alive while it waits for the next, and a reference to ``conn`` there would keep
        # an unclosed connection from being collected (no ResourceWarning, a thread leaked).
        raw = conn._conn
        execute = cast(Callable[..., Awaitable[T]], conn._execute)
        return await execute(call_in_job, raw, fn, args, kwargs)
    except ValueError as exc:
        # aiosqlite's own words for a closed connection; never a ValueError of ``fn``'s (a
        # SearchQueryError quoting a query with "closed" in it is the caller's to see).
        if str(exc) in CLOSED_WORDS:
            raise StoreClosedError("the database connection is closed") from None
        raise
    except driver_errors("ProgrammingError") as exc:
        if "closed" in str(exc):  # queued behind a close() that was already on its way
            raise StoreClosedError("the database connection is closed") from None
        raise translate_error(exc, getattr(conn, "path", "")) from None
    except driver_errors() as exc:
        raise translate_error(exc, getattr(conn, "path", "")) from None


class _NotRun:
    """The type of :data:`NOT_RUN`."""

    __slots__ = ()


#: What :func:`run_inline` returns when it did not run the function (or the function failed).
NOT_RUN: Final = _NotRun()


def run_inline(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | _NotRun:
    """Run ``fn(raw_connection, *args, **kwargs)`` right here, on the event loop's thread: no thread hop.

    For one short autocommit write (an append, a token update), where the hop to the worker
    thread costs as much as the statement. It runs only when the worker is idle (nothing queued
    or running, so the order of operations is kept; the connection's ``use`` lock keeps a job
    handed over from another thread out meanwhile) and with a busy timeout of zero, so it never
    blocks the event loop waiting for another process. When it cannot run, or the statement fails
    (a failed autocommit statement wrote nothing), it returns :data:`NOT_RUN` and the caller takes
    the worker path, which waits for locks and reports errors as usual.
    """
    if not isinstance(conn, Connection) or conn.inline_timeout is None or not conn._running:
        return NOT_RUN
    raw: Any = conn._connection  # sqlean's connection (set_busy_timeout is its own)
    if raw is None or not conn._thread.is_alive():
        return NOT_RUN  # the worker path says why (in a forked child the worker is gone too)
    # Another thread may share the connection: its worker job must not be running meanwhile.
    if not conn.use.acquire(blocking=False):
        return NOT_RUN
    try:
        if not conn.idle() or raw.in_transaction:
            return NOT_RUN
        raw.set_busy_timeout(0)
        try:
            result = fn(raw, *args, **kwargs)
        except Exception:
            if raw.in_transaction:
                raw.rollback()
            return NOT_RUN
        finally:
            raw.set_busy_timeout(conn.inline_timeout)
        return result
    finally:
        conn.use.release()


async def run_short(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """One short statement: :func:`run_inline` when the worker is idle, else :func:`run`."""
    result = run_inline(conn, fn, *args)
    if isinstance(result, _NotRun):
        return await run(conn, fn, *args)
    return result
