"""Another process holding a database's write lock until the test lets it go."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Takes the write lock, writes (a title on session ``s``, a setting), waits for a line on stdin,
#: commits. Prints "holding" once it holds the lock and "released" once it committed.
HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE sessions SET title = 'held' WHERE id = 's'")
db.execute("INSERT INTO settings (key, value) VALUES ('held', 'yes')")
print("holding", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
db.close()
print("released", flush=True)
"""


class LockHolder:
    """The holding process: :meth:`release` lets it commit, :meth:`wait_released` waits for that."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc, self._stdin, self._stdout = proc, proc.stdin, proc.stdout

    def release(self) -> None:
        self._stdin.write("go\n")
        self._stdin.flush()

    def wait_released(self) -> None:
        assert self._stdout.readline().strip() == "released"
        assert self._proc.wait(10) == 0


@contextmanager
def holding_lock(db_path: Path) -> Iterator[LockHolder]:
    """A process holding ``db_path``'s write lock from entry until released (killed on exit if
    it still runs)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "holding"
        yield LockHolder(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
