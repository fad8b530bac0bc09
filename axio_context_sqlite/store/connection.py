"""Opening databases: :func:`connect` prepares the file, and the worker thread opens it through the
driver (:mod:`.driver`), checks it is ours, sets the pragmas, loads sqlite-vec (or defers it to
its first use, :func:`.vec.load_or_defer`) and brings the schema up to date before the first call
(:mod:`.calls`) runs.

Two ways to the database. Every operation runs on the connection's worker thread (aiosqlite's
model: one thread hop per call, :func:`run`), except a few one-statement writes and reads, which
:func:`run_inline` runs on the event loop's thread when the worker is idle: the hop costs as much
as such a statement. The connection itself is shared by the two threads, never at once.

Durability: WAL with ``synchronous=NORMAL`` by default. Every committed transaction survives a
crash of the process (SIGKILL included) and the database is never corrupted; a power loss or OS
crash may lose the last transactions before a WAL checkpoint. ``synchronous="FULL"`` fsyncs every
commit for power-loss durability at the cost of a disk flush per write.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Generator
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from axio_context.encryption import key_from_environment, parse_key

from ..errors import EmptyDatabaseError, translate_error
from ..paths import db_path as db_location
from . import packing
from .adopting import READY
from .appending import install_temp_objects
from .driver import MMAP_SIZE, PAGE_SIZE, Synchronous, driver_errors, warn_vec_once
from .files import connect_raw, open_readonly, prepare_file, remove_side_files, side_files
from .schema import apply_schema, check_owner, is_empty, mark, refuse_newer
from .vec import load_or_defer
from .worker import PROGRESS_STEPS, Connection

__all__ = ["Connection", "connect"]

T = TypeVar("T")


class _Opener:
    """What :func:`connect` returns: awaitable (caller closes) or an ``async with`` block."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._conn: Connection | None = None

    def __await__(self) -> Generator[Any, None, Connection]:
        return self._factory().__await__()  # type: ignore[no-any-return]

    async def __aenter__(self) -> Connection:
        self._conn = await self._factory()
        return self._conn

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._conn is not None:
            await self._conn.close()


def connect(
    db_path: str | Path | None = None,
    *,
    busy_timeout: float = 5.0,
    synchronous: Synchronous = "NORMAL",
    readonly: bool = False,
    key: bytes | str | None = None,
) -> _Opener:
    """Open (creating if needed) a database, upgrade its schema, and return the connection.

    ``db_path`` None is :func:`~axio_context_sqlite.paths.default_db_path` (``$AXIO_CONTEXT_DB``,
    else ``context.db`` in the user data directory): the file the command line uses by default.

    Use ``conn = await connect(path)`` (the caller closes it) or ``async with connect(path) as conn``.
    ``busy_timeout`` (seconds) bounds how long a write waits for another process's lock.
    ``readonly`` opens an existing file without writing anything (no schema upgrade), even in a
    folder it cannot write (see :func:`open_readonly`).
    ``key`` (32 bytes, or 64 hex characters) opens or creates an encrypted file (docs/encryption.md);
    None takes the key from the environment (:func:`axio_context.encryption.key_from_environment`),
    if any.
    """
    path = db_location(db_path)[0]
    # A read-only open goes through a file: URI, which needs an absolute path.
    absolute = os.path.abspath(path)
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
    if busy_timeout < 0:
        raise ValueError("busy_timeout must be >= 0")

    async def open_() -> Connection:
        given = parse_key(key) if key is not None else None
        holder: dict[str, Any] = {}
        # Reading a WAL database makes its -wal and -shm, which a read-only connection cannot
        # remove when it closes: if there were none, none are left (see remove_side_files).
        tidy = readonly and not any(p.exists() for p in side_files(absolute))

        def connector() -> Any:
            # On the worker thread: the key file, the folder and the file are read or made there
            # too, not in two hops of their own to a thread pool (a cold open's milliseconds).
            secret = given if key is not None else key_from_environment()
            holder["secret"] = secret
            prepare_file(path, readonly)
            # check_same_thread off: run_inline uses the connection on the event loop's thread
            # too, only while the worker is idle, so never from two threads at once.
            if readonly:
                raw = open_readonly(absolute, busy_timeout, secret)
            else:
                raw = connect_raw(
                    str(path), secret, isolation_level=None, timeout=busy_timeout, check_same_thread=False
                )
            try:
                raw.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
                raw.execute("PRAGMA foreign_keys = ON")
                # Another application's file, or a newer database, is refused before the
                # journal-mode switch could rewrite it.
                check_owner(raw, str(path))
                refuse_newer(raw, str(path))
                if readonly and is_empty(raw):
                    raise EmptyDatabaseError(f"no database yet at {path}: the file is empty")
                if not readonly:
                    if is_empty(raw):
                        # Only a brand-new file can take these (before its first table and before
                        # WAL): small pages (the page size before anything else, see PAGE_SIZE;
                        # SQLCipher keeps its own), and `vacuum` giving space back without
                        # copying the database.
                        if secret is None:
                            raw.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                        raw.execute("PRAGMA auto_vacuum = INCREMENTAL")
                        mark(raw)  # ours from its first byte, even if this opening stops here
                    mode = raw.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if str(mode).lower() != "wal":
                        raw.execute("PRAGMA journal_mode = WAL")
                raw.execute(f"PRAGMA synchronous = {synchronous}")
                # Reads through a memory map: no copy per page. Semantic search scans the whole
                # sqlite-vec codes table on every query; on 100,000 messages its KNN took 22 ms
                # through the default 2 MB page cache, 18.8 ms mapped. Writes are unaffected.
                raw.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
                holder["vec"] = load_or_defer(raw)
                apply_schema(raw, readonly=readonly, path=str(path))
                install_temp_objects(raw)
                packing.bind(raw)  # reads rows an earlier build compressed with a dictionary
                # stops any statement of a job whose caller was cancelled (set here, not in a
                # hop of its own after the open)
                raw.set_progress_handler(holder["abandoned"], PROGRESS_STEPS)
            except BaseException:
                raw.close()
                raise
            return raw

        conn = Connection(connector)
        holder["abandoned"] = conn.abandoned
        try:
            await conn
        except BaseException as exc:
            # aiosqlite stops the worker after a failed open but does not wait for it; a worker
            # finishing after the event loop closed would die with "Event loop is closed".
            if conn._thread.is_alive():
                await asyncio.get_running_loop().run_in_executor(None, conn._thread.join, 10.0)
            if isinstance(exc, driver_errors()):
                raise translate_error(exc, str(path)) from None
            raise
        conn.vec_loaded = bool(holder.get("vec"))
        if not conn.vec_loaded:
            warn_vec_once("it did not load or failed its self-test on this platform")
        conn.path = str(path)
        conn.readonly = readonly
        if tidy:
            conn.after_close = functools.partial(remove_side_files, absolute, holder.get("secret"))
        if not readonly and synchronous in ("OFF", "NORMAL"):
            # FULL and EXTRA sync the disk on every commit: never on the event loop's thread.
            conn.inline_timeout = busy_timeout
        READY.add(conn)
        return conn

    return _Opener(open_)
