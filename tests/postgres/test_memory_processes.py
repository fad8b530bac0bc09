"""Several processes changing one PostgreSQL task board at once: no update is lost, the retry
bound holds across processes (each a real interpreter with its own pool)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from axio_context.memory import TaskStatus
from axio_context_postgres import connect
from axio_context_postgres.memory import PostgresTaskStore

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "task_worker.py"
PROCESSES = 4
CALLS = 25
MAX_RETRIES = 60  # fewer than PROCESSES * CALLS: the bound must stop exactly this many


def _run(url: str, list_id: str, task_id: str) -> list[dict[str, object]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), url, list_id, task_id, f"p{k}", str(CALLS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for k in range(PROCESSES)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            if line.strip() != "ready":
                _, err = p.communicate(timeout=30)
                pytest.fail(f"worker did not start: {line!r}\n{err}")
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, f"worker failed (status {p.returncode}):\n{err}"
            results.append(json.loads(out))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            for stream in (p.stdin, p.stdout, p.stderr):
                if stream is not None:
                    stream.close()


async def test_processes_share_one_board(fresh_pg_url: str) -> None:
    pool = await connect(fresh_pg_url)
    try:
        store = PostgresTaskStore(pool)
        board = await store.create_task_list("conv", ["shared"], max_retries=MAX_RETRIES)
        target = board.tasks[0].id
        results = _run(fresh_pg_url, board.id, target)
        after = await store.get_task_list(board.id)
    finally:
        await pool.close()
    assert after is not None
    added = [tuple(a) for r in results for a in r["added"]]  # type: ignore[attr-defined]
    assert len(added) == PROCESSES * CALLS
    # Every add landed, each at its own place: one order per task, 1..N with no gap or repeat.
    assert sorted(order for _, order in added) == list(range(1, PROCESSES * CALLS + 1))
    assert {t.id: t.order for t in after.tasks if t.id != target} == dict(added)
    # The retry bound held across processes: exactly MAX_RETRIES calls succeeded, none beyond.
    assert sum(int(r["retries"]) for r in results) == MAX_RETRIES  # type: ignore[call-overload]
    [shared] = [t for t in after.tasks if t.id == target]
    assert (shared.retry_count, shared.status) == (MAX_RETRIES, TaskStatus.IN_PROGRESS)
