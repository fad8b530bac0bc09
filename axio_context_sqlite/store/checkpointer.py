"""WAL checkpoints: a background thread that copies the WAL into the database on a connection of
its own, the writing connection's own checkpoint, and truncating the WAL on demand.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any, TypeVar

import sqlean

__all__ = [
    "CHECKPOINT_ROWS",
    "OWN_CHECKPOINT_ROWS",
    "WAL_AUTOCHECKPOINT_PAGES",
    "Checkpointer",
    "truncate_wal",
]

T = TypeVar("T")

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


class Checkpointer:
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


def truncate_wal(raw: Any, checkpointer: Checkpointer | None) -> bool:
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
