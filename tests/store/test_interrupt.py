"""Cancelling a call (a timeout, a cancelled task, Ctrl-C) interrupts the SQLite statement it
runs: the call raises at once, the connection stays usable and ``close()`` does not wait for the
statement. Real statements that would run for minutes, a real subprocess for SIGINT."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from axio_context_sqlite import Connection, SQLiteContextStore, connect
from axio_context_sqlite.store.calls import run
from tests.procs.long_query import COUNT_TO_A_BILLION
from tests.support.processes import take_ctrl_c
from tests.support.sqlite_checks import text_message

ROOT = Path(__file__).resolve().parents[2]
LONG_QUERY = ROOT / "tests" / "procs" / "long_query.py"

#: Far longer than an interrupted statement takes to stop, far shorter than the statement itself.
GENEROUS = 60.0


def _counting(outcome: list[str], started: asyncio.Event) -> Any:
    loop = asyncio.get_running_loop()

    def count(raw: Any) -> int:
        outcome.append("started")
        loop.call_soon_threadsafe(started.set)
        try:
            return int(raw.execute(COUNT_TO_A_BILLION).fetchone()[0])
        except Exception as exc:
            outcome.append(str(exc))
            raise

    return count


async def test_timeout_interrupts_the_statement_and_the_connection_stays_usable(conn: Connection) -> None:
    outcome: list[str] = []
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(run(conn, _counting(outcome, asyncio.Event())), 0.2)
    # Without the interrupt, this call would wait in the queue behind the count to a billion.
    assert (
        await asyncio.wait_for(run(conn, lambda raw: raw.execute("SELECT 41 + 1").fetchone()[0]), GENEROUS)
        == 42
    )
    assert outcome == ["started", "interrupted"]
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("still writable"))
    assert [m.text for m in await store.get_history()] == ["still writable"]


async def test_cancelled_task_interrupts_and_close_does_not_wait(db_path: Path) -> None:
    outcome: list[str] = []
    started = asyncio.Event()
    conn = await connect(db_path)
    task = asyncio.create_task(run(conn, _counting(outcome, started)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(conn.close(), GENEROUS)
    assert outcome == ["started", "interrupted"]


async def test_a_call_cancelled_while_queued_never_runs_and_interrupts_nothing_else(conn: Connection) -> None:
    first: list[str] = []
    ran: list[str] = []
    started = asyncio.Event()
    running = asyncio.create_task(run(conn, _counting(first, started)))
    await started.wait()
    queued = asyncio.create_task(run(conn, lambda raw: ran.append("queued call ran")))
    await asyncio.sleep(0.05)
    queued.cancel()  # waiting behind the first: the first's statement must go on
    with pytest.raises(asyncio.CancelledError):
        await queued
    await asyncio.sleep(0.2)
    assert first == ["started"] and not running.done()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await asyncio.wait_for(run(conn, lambda raw: None), GENEROUS)
    assert first == ["started", "interrupted"]
    assert ran == []


def test_ctrl_c_interrupts_a_long_query_under_asyncio_run(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(LONG_QUERY), str(tmp_path / "context.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=take_ctrl_c,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        # "started" is printed just before the statement begins: let it begin (a Ctrl-C in the
        # microseconds between the two is left to the progress handler, not tested here)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=GENEROUS)  # without the interrupt: minutes
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert err.rstrip().endswith("KeyboardInterrupt"), err
