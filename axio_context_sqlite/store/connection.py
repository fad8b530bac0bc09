"""Opening databases: the driver choice, pragmas, schema, and the connection lifecycle.

Many Pythons (pyenv builds, macOS system Python) ship a ``sqlite3`` that cannot load extensions,
so connections are opened through ``sqlean`` (SQLite 3.50 with FTS5, wheels for every major
platform) and handed to aiosqlite through its connector hook; the worker thread opens the
connection, loads sqlite-vec on it, and sets the pragmas. This module is the one place that
knows which driver is used.

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
import contextlib
import os
import sqlite3 as _stdlib_sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Generator
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, TypeVar, cast

import aiosqlite
import sqlean

from axio_context.errors import StoreClosedError

from ..errors import EmptyDatabaseError, translate_error
from . import packing
from .appending import install_temp_objects
from .schema import apply_schema, check_owner, is_empty, mark, refuse_newer
from .vec import load_sqlite_vec

__all__ = [
    "NOT_RUN",
    "Connection",
    "checkpoint_due",
    "connect",
    "run",
    "run_inline",
    "run_short",
    "sqlite_module",
    "truncate_wal",
]

T = TypeVar("T")

#: The DB-API module every connection comes from (exceptions included).
sqlite_module: Any = sqlean

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]

_vec_warned = False

#: SQLite virtual-machine steps between two checks of whether the running job was cancelled
#: (:meth:`_Finished.abandoned`): ~0.1-0.5 ms of work, so a check costs well under 1%.
PROGRESS_STEPS = 10_000

#: Bytes of the database file read through a memory map (SQLite caps it at its build's maximum).
MMAP_SIZE = 1 << 30


def _warn_vec_once(reason: str) -> None:
    global _vec_warned
    if not _vec_warned:
        _vec_warned = True
        warnings.warn(
            f"sqlite-vec is unavailable ({reason}); semantic search falls back to an exact scan",
            RuntimeWarning,
            stacklevel=3,
        )


#: Rows changed since the last background checkpoint at which the next one starts. A row change
#: costs about one WAL page (an append changes 3-4 rows and writes ~4 pages), so this stays well
#: under SQLite's own auto-checkpoint at 1,000 pages, the fallback. At 500 the inline checkpoint
#: still caught up under back-to-back appends (stalls of 6-10 ms); at 300 it finds little left to
#: sync (4-7 ms).
CHECKPOINT_ROWS = 300

#: Rows changed since the writing connection's own last checkpoint at which it runs the next one,
#: on its worker thread (about 1,000 WAL pages for appends, where SQLite's would run). In a burst
#: of writes the background checkpoint never finds the WAL idle, so only a checkpoint with no
#: write in flight lets the next write start the WAL over; inline writes must not run it on the
#: event loop's thread (two fsyncs: 5-8 ms in ``bench/bench_checkpoints.py``).
OWN_CHECKPOINT_ROWS = 750

#: SQLite's own checkpoint threshold (pages) on this package's connections: a safety net for
#: writes that change few rows but many pages (large media), far above the one above.
WAL_AUTOCHECKPOINT_PAGES = 8000


class _Checkpointer:
    """Copies the WAL back into the database on a thread and connection of its own.

    SQLite checkpoints inside the commit that crosses its threshold, and with ``synchronous``
    NORMAL a checkpoint's two fsyncs made that one append 11-17 ms instead of ~0.08 ms here (one
    append in ~300). ``bench/bench_checkpoints.py`` measures the trade: those stalls fall to
    5-8 ms and the mean append by ~10% (unchanged on one pinned core), the p99 rises. A PASSIVE
    checkpoint on another connection runs concurrently with writers and readers, so appends no
    longer wait for the disk.

    It also tells the writing connection when its own checkpoint is due (``own_due``, every
    ``OWN_CHECKPOINT_ROWS`` rows): that one runs on the connection's worker thread, never in an
    inline write on the event loop's, and it is the one that lets the WAL start over during a
    burst of writes. Durability is unchanged: the same ``synchronous`` level applies to both.
    """

    def __init__(self, path: str, synchronous: str) -> None:
        self._path = path
        self._synchronous = synchronous
        self._changed = 0
        self._unsynced = 0  # rows since the writing connection's own checkpoint
        #: The writing connection's own checkpoint is due (run by its next job on its thread).
        self.own_due = False
        #: The next write may start a new WAL (none yet, or a checkpoint copied all of it), and
        #: SQLite syncs a new WAL's header to disk in that write: it goes to the worker thread.
        self.wal_may_restart = True
        self._wake = threading.Event()
        self._idle = threading.Event()  # set while the thread is not checkpointing
        self._idle.set()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.runs = 0  # checkpoints done (observable by tests and the bench)

    def wrote(self, rows: int) -> None:
        """Count ``rows`` changed (on the thread using the connection); past the threshold, wake
        the checkpoint thread."""
        self._unsynced += rows
        if self._unsynced >= OWN_CHECKPOINT_ROWS:
            self.own_due = True
        self._changed += rows
        if self._changed < CHECKPOINT_ROWS or self._stopping:
            return
        self._changed = 0
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="axio-context checkpoint", daemon=True)
            self._thread.start()
        self._wake.set()

    def own(self, raw: Any) -> None:
        """The writing connection's own checkpoint, on its worker thread, outside a transaction.

        A failure (another connection's checkpoint running, an I/O error) is left for the next
        one: the write that made it due has committed.
        """
        self.own_due = False
        self._unsynced = 0
        # A checkpoint already running (the thread's, mid-fsync) makes this one return at once
        # having copied nothing: let it finish first (a few ms).
        self.wait_idle(1.0)
        with contextlib.suppress(sqlean.Error):
            self._passive(raw)

    def _passive(self, db: Any) -> None:
        """A PASSIVE checkpoint through ``db``; when it copied the whole WAL, the next write
        starts a new one."""
        _, log, done = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
        if log == done:
            self.wal_may_restart = True

    def _loop(self) -> None:
        db = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                self._idle.clear()
                try:
                    if db is None:
                        # mode=rw: never create a file, whatever happened to the path meanwhile
                        target = Path(self._path).as_uri() + "?mode=rw"
                        db = sqlean.connect(target, uri=True, isolation_level=None, check_same_thread=True)
                        db.execute(f"PRAGMA synchronous = {self._synchronous}")
                    self._passive(db)
                    self.runs += 1
                except sqlean.Error:
                    pass  # busy or failing: the writing connection's own checkpoint remains
                finally:
                    self._idle.set()
        finally:
            if db is not None:
                db.close()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the thread is not checkpointing (at most ``timeout`` seconds)."""
        return self._idle.wait(timeout)

    def stop(self) -> threading.Thread | None:
        """Ask the thread to end (it closes its connection); returns it for joining."""
        self._stopping = True
        self._wake.set()
        return self._thread


class _Finished:
    """How many jobs a connection's worker thread has finished (written there, read on the loop),
    and which job it is running (so a cancelled caller interrupts its own statement, no other)."""

    __slots__ = ("count", "current", "lock")

    def __init__(self) -> None:
        self.count = 0
        self.current: asyncio.Future[Any] | None = None
        self.lock = threading.Lock()  # guards `current` against a cancelled caller's interrupt

    def abandoned(self) -> int:
        """SQLite's progress handler: non-zero (abort the statement) while the running job's
        caller has been cancelled. ``interrupt()`` stops the statement running at the moment of
        the cancellation; this stops one the job starts after it (or just before, a race)."""
        future = self.current
        return 1 if future is not None and future.cancelled() else 0


def _job(
    finished: _Finished, use: threading.Lock, future: asyncio.Future[Any], call: Callable[[], Any]
) -> None:
    """One job on the worker thread: run ``call`` holding the connection's ``use`` lock (so an
    inline statement from another thread never runs inside it), count it, hand back its outcome.
    A job whose caller was cancelled while it waited in the queue is not run at all."""
    try:
        with use:
            if future.cancelled():
                result = None
            else:
                with finished.lock:
                    finished.current = future
                try:
                    result = call()
                finally:
                    with finished.lock:
                        finished.current = None
    except BaseException as exc:  # the caller's to see, whatever it is
        finished.count += 1
        _deliver(future, _set_exception, exc)
    else:
        finished.count += 1
        _deliver(future, _set_result, result)


def _deliver(future: asyncio.Future[Any], setter: Callable[..., None], value: Any) -> None:
    # The loop that asked may be closed by now (a timed-out call in an `asyncio.run` that
    # ended): nobody waits for this outcome, and the worker must live on for the next loop.
    with contextlib.suppress(RuntimeError):
        future.get_loop().call_soon_threadsafe(setter, future, value)


def _set_result(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():  # cancelled meanwhile
        future.set_result(result)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class Connection(aiosqlite.Connection):
    """An aiosqlite connection whose close joins its thread and whose thread never blocks exit.

    ``vec_loaded`` says whether sqlite-vec loaded and passed its self-test on this connection;
    ``dicts`` holds its database's compression dictionaries (see :mod:`.storage`). It counts the
    jobs it hands its worker and the ones finished, so :func:`run_inline` knows when the worker
    is idle.
    """

    def __init__(self, connector: Callable[[], Any], iter_chunk_size: int = 64) -> None:
        super().__init__(connector, iter_chunk_size)
        # A program that forgot to close must still exit; unclosed connections still warn
        # (ResourceWarning from aiosqlite's __del__).
        self._thread.daemon = True
        self.vec_loaded = False
        self.path: str = ""
        #: Opened with ``readonly=True``: nothing is ever written through it.
        self.readonly = False
        self.checkpointer: _Checkpointer | None = None
        self.dicts: packing.Dictionaries | None = None
        #: Busy timeout (seconds) restored after an inline statement; None: no inline statements.
        self.inline_timeout: float | None = None
        self._submitted = 0
        self._counting = threading.Lock()  # jobs may be handed over from several threads
        #: Held while the database connection runs something: a worker job or an inline run.
        self.use = threading.Lock()
        #: The process that opened it: a child made by os.fork() must open its own.
        self.pid = os.getpid()
        # Not the connection itself: the worker keeps its last job alive, and a reference to the
        # connection there would keep an unclosed one from being collected.
        self._finished = _Finished()

    def check_usable(self) -> None:
        """Raise :class:`StoreClosedError` when this connection cannot take work: closed, opened
        by the parent of this forked process, or its worker thread gone."""
        if not self._running or not self._connection:
            raise ValueError("Connection closed")  # as aiosqlite's own (run() translates it)
        if self._thread.ident is not None and not self._thread.is_alive():
            # os.fork() copies only the forking thread, so a forked child's copy has no worker
            # either: the process id is asked only here, not on every call.
            if self.pid != os.getpid():
                raise StoreClosedError(
                    f"this database connection belongs to process {self.pid}, which forked this one; "
                    "open a new connection in this process"
                )
            raise StoreClosedError(
                "the database connection's worker thread has stopped; open a new connection"
            )

    async def _execute(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Hand ``fn`` to the worker thread (as aiosqlite does), counting jobs in and out."""
        self.check_usable()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with self._counting:
            self._submitted += 1
        self._tx.put_nowait(
            (None, partial(_job, self._finished, self.use, future, partial(fn, *args, **kwargs)))
        )
        try:
            return await future
        except BaseException:
            # Cancelled (a timeout, a cancelled task, Ctrl-C under asyncio.run): stop the
            # statement it is running so the connection is free for the next call and close().
            self._interrupt(future)
            raise

    def _interrupt(self, future: asyncio.Future[Any]) -> None:
        """Interrupt SQLite if the worker is running ``future``'s job (thread-safe; a job that
        already finished, or has not started and now never will, needs nothing)."""
        with self._finished.lock:
            raw = self._connection
            if self._finished.current is future and raw is not None:
                raw.interrupt()

    @property
    def jobs(self) -> int:
        """Jobs handed to the worker thread so far: one thread hop each."""
        return self._submitted

    def idle(self) -> bool:
        """Whether every job handed to the worker thread has finished (so it is not using the
        database connection)."""
        return self._submitted == self._finished.count

    async def close(self) -> None:
        """Finish queued work, close the database and join the worker thread; final."""
        if self._connection is None:
            return
        if self.pid != os.getpid() or (self._thread.ident is not None and not self._thread.is_alive()):
            # A forked child's copy (SQLite forbids using it there, and the parent still does),
            # or a worker that died: nothing can run on it; forget it.
            self._running = False
            self._connection = None
            return
        loop = asyncio.get_running_loop()
        try:
            if self.checkpointer is not None:
                # First, so that this connection is the file's last and cleans the WAL up.
                thread = self.checkpointer.stop()
                if thread is not None and thread.is_alive():
                    await loop.run_in_executor(None, thread.join, 10.0)
        finally:
            try:
                await super().close()
            finally:
                if self._thread.is_alive():
                    await loop.run_in_executor(None, self._thread.join, 10.0)


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


def _prepare_file(path: Path, readonly: bool) -> None:
    if readonly:
        if not path.exists():
            from ..errors import DatabaseNotFoundError

            raise DatabaseNotFoundError(f"no database at {path}")
        return
    # A symlink is followed, as SQLite follows it: one whose target is missing has its target
    # created here, owner-only (O_EXCL on the link itself fails as if the file existed).
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from ..errors import DatabaseOpenError

        raise DatabaseOpenError(f"cannot create the folder for {path}: {exc.strerror}") from None
    try:
        # A new database is readable by its owner only; SQLite gives -wal/-shm the same mode.
        fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        _restore_side_file_modes(target)
        return
    except OSError as exc:
        from ..errors import DatabaseOpenError

        raise DatabaseOpenError(f"cannot create database {path}: {exc.strerror}") from None
    os.close(fd)


def _restore_side_file_modes(path: Path) -> None:
    """Make ``-wal``/``-shm`` writable again where the database file is.

    SQLite gives them the database file's mode when it creates them; made while the file was
    read-only, they stay read-only after the file is writable again, and every later write fails
    as if the database were read-only. Changing their mode does not disturb open connections.
    """
    if not os.access(path, os.W_OK):
        return
    with contextlib.suppress(OSError):
        mode = path.stat().st_mode & 0o666
        for suffix in ("-wal", "-shm"):
            side = path.with_name(path.name + suffix)
            if side.exists() and not os.access(side, os.W_OK):
                os.chmod(side, mode)


def _open_readonly(absolute: str, busy_timeout: float) -> Any:
    """A read-only driver connection to an existing database, even in a folder it cannot write.

    Reading a WAL database needs its ``-shm`` index, which SQLite cannot create in a read-only
    folder (a snapshot, a read-only mount, another user's folder). With no ``-wal`` content
    there, the file alone is the whole database and no writer can start one: it is opened
    ``immutable`` (no index, no locks). Committed changes still in a ``-wal`` cannot be read
    that way, so that case is a clear error instead of a stale view.
    """
    uri = Path(absolute).as_uri()
    raw = sqlean.connect(
        uri + "?mode=ro", uri=True, isolation_level=None, timeout=busy_timeout, check_same_thread=False
    )
    try:
        raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return raw
    except sqlean.OperationalError as exc:
        raw.close()
        low = str(exc).lower()
        if "readonly" not in low and "read-only" not in low and "unable to open" not in low:
            raise
    wal = Path(absolute + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        from ..errors import ReadOnlyDatabaseError

        raise ReadOnlyDatabaseError(
            f"cannot read {absolute}: changes not yet copied from {wal.name} need a -shm file, "
            "which its read-only folder cannot hold; copy the database and its -wal file to a "
            "writable folder, or open it once where the folder is writable"
        )
    return sqlean.connect(
        uri + "?mode=ro&immutable=1",
        uri=True,
        isolation_level=None,
        timeout=busy_timeout,
        check_same_thread=False,
    )


def connect(
    db_path: str | Path,
    *,
    busy_timeout: float = 5.0,
    synchronous: Synchronous = "NORMAL",
    readonly: bool = False,
) -> _Opener:
    """Open (creating if needed) a database, upgrade its schema, and return the connection.

    Use ``conn = await connect(path)`` (the caller closes it) or ``async with connect(path) as conn``.
    ``busy_timeout`` (seconds) bounds how long a write waits for another process's lock.
    ``readonly`` opens an existing file without writing anything (no schema upgrade), even in a
    folder it cannot write (see :func:`_open_readonly`).
    """
    path = Path(db_path).expanduser()
    # The checkpoint thread opens the file later, perhaps after the program changed directory.
    absolute = os.path.abspath(path)
    if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
    if busy_timeout < 0:
        raise ValueError("busy_timeout must be >= 0")

    async def open_() -> Connection:
        await asyncio.to_thread(_prepare_file, path, readonly)
        holder: dict[str, Any] = {}

        def connector() -> Any:
            # check_same_thread off: run_inline uses the connection on the event loop's thread
            # too, only while the worker is idle, so never from two threads at once.
            if readonly:
                raw = _open_readonly(absolute, busy_timeout)
            else:
                raw = sqlean.connect(
                    str(path), isolation_level=None, timeout=busy_timeout, check_same_thread=False
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
                        # Only a brand-new file can take this (before its first table and before
                        # WAL): `vacuum` can then give space back without copying the database.
                        raw.execute("PRAGMA auto_vacuum = INCREMENTAL")
                        mark(raw)  # ours from its first byte, even if this opening stops here
                    mode = raw.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if str(mode).lower() != "wal":
                        raw.execute("PRAGMA journal_mode = WAL")
                raw.execute(f"PRAGMA synchronous = {synchronous}")
                raw.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
                # Reads through a memory map: no copy per page. Semantic search scans the whole
                # sqlite-vec codes table on every query; on 100,000 messages its KNN took 22 ms
                # through the default 2 MB page cache, 18.8 ms mapped. Writes are unaffected.
                raw.execute(f"PRAGMA mmap_size = {MMAP_SIZE}")
                holder["vec"] = load_sqlite_vec(raw)
                apply_schema(raw, readonly=readonly, path=str(path))
                install_temp_objects(raw)
                holder["dicts"] = packing.bind(raw)
            except BaseException:
                raw.close()
                raise
            return raw

        conn = Connection(connector)
        try:
            await conn
            await conn._execute(conn._conn.set_progress_handler, conn._finished.abandoned, PROGRESS_STEPS)
        except BaseException as exc:
            # aiosqlite stops the worker after a failed open but does not wait for it; a worker
            # finishing after the event loop closed would die with "Event loop is closed".
            if conn._thread.is_alive():
                await asyncio.get_running_loop().run_in_executor(None, conn._thread.join, 10.0)
            if isinstance(exc, sqlean.Error):
                raise translate_error(exc, str(path)) from None
            raise
        conn.vec_loaded = bool(holder.get("vec"))
        conn.dicts = holder["dicts"]
        if not conn.vec_loaded:
            _warn_vec_once("it did not load or failed its self-test on this platform")
        conn.path = str(path)
        conn.readonly = readonly
        if not readonly and synchronous in ("OFF", "NORMAL"):
            # FULL and EXTRA sync the disk on every commit: never on the event loop's thread.
            conn.inline_timeout = busy_timeout
        if not readonly:
            conn.checkpointer = _Checkpointer(absolute, synchronous)
            # Unclosed and collected: let the thread end (it holds no reference to the connection).
            weakref.finalize(conn, conn.checkpointer.stop)
        _READY.add(conn)
        return conn

    return _Opener(open_)


# Connections whose schema is known to be current (ours, or plain aiosqlite ones we prepared).
_READY: weakref.WeakSet[aiosqlite.Connection] = weakref.WeakSet()
_PREPARING: weakref.WeakKeyDictionary[aiosqlite.Connection, asyncio.Lock] = weakref.WeakKeyDictionary()


#: The ValueError messages aiosqlite (and :meth:`Connection.check_usable`) give a closed connection.
_CLOSED_WORDS: Final = frozenset({"Connection closed", "no active connection"})


async def run(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(raw_connection, *args)`` on the connection's worker thread: one thread hop.

    Everything ``fn`` does happens before any other queued operation on that connection, so a
    multi-statement transaction inside it is atomic with respect to the rest of the program.
    Database errors come back as this package's named errors.
    """
    if conn not in _READY:
        await _prepare_foreign(conn)
    try:
        # Hand the worker the raw connection, never ``conn``: the worker thread keeps its last
        # job alive while it waits for the next, and a reference to ``conn`` there would keep
        # an unclosed connection from being collected (no ResourceWarning, a thread leaked).
        raw = conn._conn
        execute = cast(Callable[..., Awaitable[T]], conn._execute)
        return await execute(_call, raw, fn, args, kwargs, getattr(conn, "checkpointer", None))
    except ValueError as exc:
        # aiosqlite's own words for a closed connection; never a ValueError of ``fn``'s (a
        # SearchQueryError quoting a query with "closed" in it is the caller's to see).
        if str(exc) in _CLOSED_WORDS:
            raise StoreClosedError("the database connection is closed") from None
        raise
    except (sqlean.ProgrammingError, _stdlib_sqlite3.ProgrammingError) as exc:
        if "closed" in str(exc):  # queued behind a close() that was already on its way
            raise StoreClosedError("the database connection is closed") from None
        raise translate_error(exc, getattr(conn, "path", "")) from None
    except (sqlean.Error, _stdlib_sqlite3.Error) as exc:
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
    blocks the event loop waiting for another process. It leaves to the worker the write that may
    start a new WAL, whose header SQLite syncs to disk. When it cannot run, or the statement fails
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
        if conn.checkpointer is not None and conn.checkpointer.wal_may_restart:
            return NOT_RUN
        changes = raw.total_changes
        raw.set_busy_timeout(0)
        try:
            result = fn(raw, *args, **kwargs)
        except Exception:
            if raw.in_transaction:
                raw.rollback()
            return NOT_RUN
        finally:
            raw.set_busy_timeout(conn.inline_timeout)
        if conn.checkpointer is not None and raw.total_changes != changes:
            conn.checkpointer.wrote(raw.total_changes - changes)
        return result
    finally:
        conn.use.release()


async def run_short(conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """One short statement: :func:`run_inline` when the worker is idle, else :func:`run`."""
    result = run_inline(conn, fn, *args)
    if isinstance(result, _NotRun):
        return await run(conn, fn, *args)
    if checkpoint_due(conn):
        await run(conn, _nothing)  # the worker runs the due checkpoint after it (see _call)
    return result


def checkpoint_due(conn: aiosqlite.Connection) -> bool:
    """Whether the connection's own WAL checkpoint is due: the next job on its thread runs it."""
    checkpointer = getattr(conn, "checkpointer", None)
    return checkpointer is not None and bool(checkpointer.own_due)


def _nothing(raw: Any) -> None:
    return None


def truncate_wal(raw: Any, checkpointer: _Checkpointer | None) -> bool:
    """Copy the whole WAL into the database file and truncate the WAL to zero bytes.

    Runs on the connection's worker thread, outside a transaction. A checkpoint already running
    (this connection's background one, or another process's) holds SQLite's checkpoint lock, and
    a TRUNCATE checkpoint meeting it returns busy at once, without the busy handler: so wait for
    ours, and retry for up to the busy timeout. Returns False when the WAL could not be emptied
    (another connection kept reading it).
    """
    busy_ms = int(raw.execute("PRAGMA busy_timeout").fetchone()[0])
    deadline = time.monotonic() + busy_ms / 1000
    try:
        # Each try without waiting: a TRUNCATE checkpoint holds the write lock while its busy
        # handler waits for readers, which would stall every writer for the whole timeout.
        raw.execute("PRAGMA busy_timeout = 0")
        while True:
            if checkpointer is not None:
                checkpointer.wait_idle(max(0.0, deadline - time.monotonic()))
            if not raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                if checkpointer is not None:
                    checkpointer.wal_may_restart = True  # the next write starts a new WAL
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
    finally:
        raw.execute(f"PRAGMA busy_timeout = {busy_ms}")


def _call(
    raw: Any,
    fn: Callable[..., T],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    checkpointer: _Checkpointer | None = None,
) -> T:
    # A plain aiosqlite connection is in sqlite3's legacy transaction mode: a lone INSERT or
    # UPDATE (a token update) silently opens a transaction that nobody commits, holding the
    # write lock and breaking the next BEGIN. Finish what the call implicitly opened.
    began = raw.in_transaction
    changes = raw.total_changes
    try:
        result = fn(raw, *args, **kwargs)
    except BaseException:
        if not began and raw.in_transaction:
            raw.rollback()
        raise
    if not began and raw.in_transaction:
        raw.commit()
    if checkpointer is not None:
        if raw.total_changes != changes:
            checkpointer.wal_may_restart = False
            checkpointer.wrote(raw.total_changes - changes)
        if checkpointer.own_due and not raw.in_transaction:
            checkpointer.own(raw)
    return result


def _main_file(raw: Any) -> str:
    """The path of the connection's main database file ("" in memory), for error messages."""
    for _, name, file in raw.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file or "")
    return ""


async def _prepare_foreign(conn: aiosqlite.Connection) -> None:
    """Bring a connection opened with plain ``aiosqlite.connect`` up to the current schema."""
    lock = _PREPARING.setdefault(conn, asyncio.Lock())
    async with lock:
        if conn in _READY:
            return

        def prepare(raw: Any) -> packing.Dictionaries:
            path = _main_file(raw)
            check_owner(raw, path)  # before anything writes to it, even the journal mode
            refuse_newer(raw, path)
            with contextlib.suppress(Exception):
                raw.execute("PRAGMA journal_mode = WAL")
            apply_schema(raw, readonly=False, path=path)
            install_temp_objects(raw)
            return packing.bind(raw)

        try:
            raw = conn._conn
            execute = cast(Callable[..., Awaitable[packing.Dictionaries]], conn._execute)
            conn.dicts = await execute(_call, raw, prepare, (), {})  # type: ignore[attr-defined]
        except ValueError as exc:
            if str(exc) not in _CLOSED_WORDS:
                raise
            raise StoreClosedError("the database connection is closed") from exc
        except (sqlean.Error, _stdlib_sqlite3.Error) as exc:
            raise translate_error(exc, "") from None
        _READY.add(conn)
