"""Several processes write one agent thread on PostgreSQL at once, starting from nothing: one
session is made, every batch lands whole and in its writer's order, tags stay right, and a run
id several processes claim for different threads goes to exactly one of them."""

from __future__ import annotations

from pathlib import Path

from axio_context_postgres import connect
from axio_context_postgres.agents import PostgresHistoryProvider
from tests.support.processes import run_together

WORKER = Path(__file__).resolve().parent / "agent_worker.py"
PROCESSES = 4
BATCHES = 25


def _run(url: str) -> list[dict[str, bool]]:
    return run_together([[str(WORKER), url, f"p{k}", str(BATCHES)] for k in range(PROCESSES)])


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
