"""Several processes appending to one PostgreSQL queue and adding to one pool at once: every
change lands (the container's row lock serialises them), each process's items keep its order."""

from __future__ import annotations

from pathlib import Path

from axio_context_postgres import connect
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue
from tests.support.processes import run_together

WORKER = Path(__file__).resolve().parent / "pool_worker.py"
PROCESSES = 3
CALLS = 20


def _run(url: str) -> list[dict[str, list[int]]]:
    return run_together([[str(WORKER), url, f"p{k}", str(CALLS)] for k in range(PROCESSES)])


async def test_processes_lose_no_append_and_no_add(fresh_pg_url: str) -> None:
    pool = await connect(fresh_pg_url)
    try:
        await PostgresContextQueue.open(pool, "shared-q", 1000)
        await PostgresContextPool.open(pool, "shared-p")
        results = _run(fresh_pg_url)
        queue = await PostgresContextQueue.open(pool, "shared-q")
        items = await PostgresContextPool.open(pool, "shared-p")
        # The counters each change computes from the row it locked: a lost update shows here.
        counters = await pool.fetch("SELECT name, size, version FROM context_pools ORDER BY name")
    finally:
        await pool.close()
    names = [f"p{k}-{i}" for k in range(PROCESSES) for i in range(CALLS)]
    contents = [i.content for i in queue]
    assert sorted(contents) == sorted(names)  # none lost, none twice
    for k in range(PROCESSES):
        assert [c for c in contents if c.startswith(f"p{k}-")] == [f"p{k}-{i}" for i in range(CALLS)]
    assert sorted(i.id or "" for i in items) == sorted(names) and len(items) == len(names)
    total = PROCESSES * CALLS
    assert [tuple(r) for r in counters] == [("shared-p", total, total), ("shared-q", total, total)]
    for r in results:  # each process's copy grew with every add: its own and the others' so far
        sizes = r["sizes"]
        assert sizes == sorted(sizes) and sizes[0] >= 1 and len(set(sizes)) == CALLS
