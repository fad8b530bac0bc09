"""Truncating the WAL on demand: ``checkpoint`` and ``vacuum`` leave the file alone holding
everything. Ordinary checkpoints are SQLite's own (every 1,000 WAL pages, in the commit that
crosses them): a background checkpoint thread was measured and bought nothing on appends
(``bench/MECHANISMS.md``).
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["truncate_wal"]


def truncate_wal(raw: Any) -> bool:
    """Copy the whole WAL into the database file and truncate the WAL to zero bytes.

    Runs on the connection's worker thread, outside a transaction. Another process's checkpoint
    holds SQLite's checkpoint lock, and a TRUNCATE checkpoint meeting it returns busy at once,
    without the busy handler: so retry for up to the busy timeout. Returns False when the WAL
    could not be emptied (another connection kept reading it).
    """
    busy_ms = int(raw.execute("PRAGMA busy_timeout").fetchone()[0])
    deadline = time.monotonic() + busy_ms / 1000
    try:
        # Each try without waiting: a TRUNCATE checkpoint holds the write lock while its busy
        # handler waits for readers, which would stall every writer for the whole timeout.
        raw.execute("PRAGMA busy_timeout = 0")
        while True:
            if not raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
    finally:
        raw.execute(f"PRAGMA busy_timeout = {busy_ms}")
