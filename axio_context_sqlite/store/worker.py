"""The connection and its worker thread: every job runs there, one at a time, and a cancelled
caller interrupts its own statement (SQLite's ``interrupt()`` and a progress handler).

This relies on aiosqlite's internals (the worker ``_thread``, its queue ``_tx``, ``_connection``,
``_running``), so ``pyproject.toml`` pins the exact aiosqlite version that was checked, and
``tests/store/test_packaging.py`` fails when the installed one differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, Final, TypeVar

import aiosqlite
import aiosqlite.core

from axio_context.errors import StoreClosedError

__all__ = ["PROGRESS_STEPS", "Connection", "call_in_job"]

T = TypeVar("T")

#: SQLite virtual-machine steps between two checks of whether the running job was cancelled
#: (:meth:`_Finished.abandoned`): ~0.1-0.5 ms of work, so a check costs well under 1%.
PROGRESS_STEPS = 10_000


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

    ``vec_loaded`` says whether sqlite-vec runs on this connection: loaded and self-tested at the
    open, or proven in this process and loaded on first use (:func:`.vec.load_or_defer`).
    It counts the jobs it hands its worker and the ones finished, so :func:`run_inline` knows when the worker
    is idle.
    """

    #: Calls work from any event loop, on any thread: the worker hands each outcome back to the
    #: loop that asked (:meth:`_execute`), so a caller in another loop needs no hop of its own.
    any_loop = True

    def __init__(self, connector: Callable[[], Any], iter_chunk_size: int = 64) -> None:
        super().__init__(connector, iter_chunk_size)
        # A program that forgot to close must still exit; unclosed connections still warn
        # (ResourceWarning from aiosqlite's __del__).
        self._thread.daemon = True
        self.vec_loaded = False
        self.path: str = ""
        #: Opened with ``readonly=True``: nothing is ever written through it.
        self.readonly = False
        #: Run (on a worker thread) once the connection has closed: the tidying of a read-only
        #: open (:func:`~.files.remove_side_files`).
        self.after_close: Callable[[], None] | None = None
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

    @property
    def abandoned(self) -> Callable[[], int]:
        """The progress handler that stops any statement of a job whose caller was cancelled
        (set on the driver's connection as it opens, see :func:`.connection.connect`)."""
        return self._finished.abandoned

    async def abort_statements_when_cancelled(self) -> None:
        """Install the progress handler that stops any statement of a job whose caller was
        cancelled (:meth:`_Finished.abandoned`)."""
        await self._execute(self._conn.set_progress_handler, self._finished.abandoned, PROGRESS_STEPS)

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
        try:
            await self._close_and_stop()
        finally:
            # The worker returns right after handing the outcome back: a short wait here saves
            # a hop to a pool thread; only a worker still busy is waited for there.
            self._thread.join(0.05)
            if self._thread.is_alive():
                await _off_loop(self._thread.join, 10.0)
        if self.after_close is not None:
            tidy, self.after_close = self.after_close, None
            await _off_loop(tidy)

    async def _close_and_stop(self) -> None:
        """Close the database and stop the worker in one job (aiosqlite's close takes two hops:
        the close, then the stop), holding ``use`` so no inline statement runs meanwhile."""
        self._running = False
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        failed: list[BaseException] = []

        def close_and_stop() -> object:
            try:
                with self.use:
                    raw, self._connection = self._connection, None
                    if raw is not None:
                        raw.close()
            except BaseException as exc:  # the caller's to see; the worker stops all the same
                failed.append(exc)
            return _STOP

        self._tx.put_nowait((future, close_and_stop))
        try:
            await future
        finally:
            self._connection = None
        if failed:
            raise failed[0]


#: What a worker's last job returns: aiosqlite's worker loop ends on it.
_STOP: Final = aiosqlite.core._STOP_RUNNING_SENTINEL


async def _off_loop(fn: Callable[..., object], *args: Any) -> None:
    """Run ``fn`` on a pool thread; at interpreter exit (an atexit close: no new thread pool can
    start then) on this thread, as nothing else runs any more."""
    try:
        await asyncio.get_running_loop().run_in_executor(None, fn, *args)
    except RuntimeError:  # "can't register atexit after shutdown"
        fn(*args)


def call_in_job(
    raw: Any,
    fn: Callable[..., T],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> T:
    # A plain aiosqlite connection is in sqlite3's legacy transaction mode: a lone INSERT or
    # UPDATE (a token update) silently opens a transaction that nobody commits, holding the
    # write lock and breaking the next BEGIN. Finish what the call implicitly opened.
    began = raw.in_transaction
    try:
        result = fn(raw, *args, **kwargs)
    except BaseException:
        if not began and raw.in_transaction:
            raw.rollback()
        raise
    if not began and raw.in_transaction:
        raw.commit()
    return result
