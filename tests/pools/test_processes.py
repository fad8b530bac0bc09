"""Real processes on one database: two writers on one pool lose no update; a queue killed with
SIGKILL mid-stream reopens as its last committed append left it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from axio_context.pools import ContextItem
from axio_context_sqlite import connect
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "pool_worker.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
N = 30


def _two_writers(db: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "add", str(db), "shared", prefix, str(N)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for prefix in ("a", "b")
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done"


async def test_two_processes_on_one_pool_lose_no_update(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    async with connect(db) as conn:
        mine = await SQLiteContextPool.open(conn, "shared", limit=1000)
        await asyncio.to_thread(_two_writers, db)
        assert len(mine) == 0
        await mine.add(ContextItem(0, "mine", "m"))  # stale handle: computed from the stored state
        assert len(mine) == 2 * N + 2
    async with connect(db) as conn:
        pool = await SQLiteContextPool.open(conn, "shared")
        ids = {i.id for i in pool.items}
        assert ids == {f"{x}-{i}" for x in "ab" for i in range(N)} | {"shared", "m"}
        assert len(pool) == 2 * N + 2 and ids >= {"m", "shared"}


def _killed_writer(db: Path) -> int:
    """Start an appending process, SIGKILL it once it reported 40 appends; the last it reported."""
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "append", str(db), "log", "1000000"],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    last = -1
    for line in proc.stdout:
        last = int(line)
        if last >= 40:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # It ran ahead of this reader: what it printed before dying was committed too.
    for line in proc.stdout:
        last = int(line)
    proc.stdout.close()
    return last


async def test_queue_after_sigkill_is_its_last_commit(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    last = await asyncio.to_thread(_killed_writer, db)
    async with connect(db) as conn:
        queue = await SQLiteContextQueue.open(conn, "log")
        contents = [i.content for i in queue.items]
        # Every append it reported is there; at most the one committed but not yet printed beyond.
        assert len(contents) == 5 and contents[-1] in (last, last + 1)
        assert contents == list(range(contents[-1] - 4, contents[-1] + 1))
        assert [i.description for i in queue.items] == [f"step {c}" for c in contents]
        await queue.append(*[])
        child = await queue.branch()
        assert [i.content for i in child.items] == contents


def _expiring_worker(db: Path) -> list[str]:
    """The worker adds "gone" (1 s) and "kept"; after 1.2 s its copy is asked what it shows, the
    pool is swept from here, and the worker refreshes: the answers, in order."""
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), "expire", str(db), "ttl"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert worker.stdin is not None and worker.stdout is not None

    def ask(line: str) -> str:
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(line + "\n")
        worker.stdin.flush()
        return worker.stdout.readline().strip()

    try:
        said = [worker.stdout.readline().strip()]  # "ready": "gone" was added before
        time.sleep(1.2)  # past its TTL
        said.append(ask("show"))  # by the worker's copy's clock
        said.append(str(asyncio.run(_sweep(db))))
        said.append(ask("refresh"))  # the sweep moved the pool's version
    finally:
        worker.stdin.close()
        said.append(str(worker.wait(120)))
        worker.stdout.close()
    return said


async def _sweep(db: Path) -> tuple[list[str | None], int, int]:
    async with connect(db) as conn:
        mine = await SQLiteContextPool.open(conn, "ttl")
        return [i.id for i in mine.items], await mine.count_expired(), await mine.sweep_expired()


async def test_another_process_copy_hides_an_expired_item_and_follows_the_sweep(tmp_path: Path) -> None:
    said = await asyncio.to_thread(_expiring_worker, tmp_path / "e.db")
    assert said == ["ready", "kept", "(['kept'], 1, 1)", "True kept", "0"]
