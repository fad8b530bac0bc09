"""Several processes write one agent thread on PostgreSQL at once, starting from nothing: one
session is made, every batch lands whole and in its writer's order, tags stay right, and a run
id several processes claim for different threads goes to exactly one of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from axio_context_postgres import connect
from axio_context_postgres.agents import PostgresHistoryProvider

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "agent_worker.py"
PROCESSES = 4
BATCHES = 25


def _run(url: str) -> list[dict[str, bool]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), url, f"p{k}", str(BATCHES)],
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


async def test_processes_share_one_thread(fresh_pg_url: str) -> None:
    results = _run(fresh_pg_url)
    pool = await connect(fresh_pg_url)
    try:
        provider = PostgresHistoryProvider(pool, project="p")
        got = [getattr(m.content[0], "text", "?") for m in await provider.get_messages("a", session_id="t")]
        runs = await provider.get_run_ids("a", session_id="t")
        threads = await pool.fetch("SELECT s.id FROM agent_sessions a JOIN sessions s ON s.sid = a.sid")
        positions = await pool.fetch(
            "SELECT m.position FROM messages m JOIN sessions s ON s.seg = m.seg WHERE s.id = 't:a'"
        )
    finally:
        await pool.close()
    # One session for the shared thread; a refused claim left no thread behind.
    winner = next(k for k, r in enumerate(results) if r["contested"])
    assert sorted(r["id"] for r in threads) == sorted(["t:a", f"own-p{winner}:a"])
    total = PROCESSES * BATCHES * 2
    assert len(got) == total and len(set(got)) == total  # nothing lost, nothing twice
    assert sorted(r[0] for r in positions) == list(range(total))  # dense
    for k in range(PROCESSES):
        mine = [(g, r) for g, r in zip(got, runs, strict=True) if g.startswith(f"p{k}-")]
        assert [g for g, _ in mine] == [f"p{k}-{i}-{j}" for i in range(BATCHES) for j in range(2)]
        assert {r for _, r in mine} == {f"p{k}"}
    assert all(got[i][:-1] == got[i + 1][:-1] for i in range(0, total, 2))  # each pair whole
    assert sum(r["contested"] for r in results) == 1  # the run went to exactly one thread
