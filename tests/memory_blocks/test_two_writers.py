"""Two real processes read-modify-write one block, each write naming the version it read: a
stale write is refused and retried, so no update is lost, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from axio_context.backends.registry import open_database
from axio_context.memory_blocks import MemoryBlock
from tests.support.processes import run_together

WORKER = Path(__file__).resolve().parent / "block_worker.py"
PROCESSES = 2
CALLS = 25


async def test_two_processes_lose_no_update(axio_database_location: str) -> None:
    where = axio_database_location
    async with open_database(where) as db:
        await db.memory_stores().blocks().create(MemoryBlock("counter", "0"))

    results = run_together([[str(WORKER), where, f"p{k}", str(CALLS)] for k in range(PROCESSES)])

    async with open_database(where) as db:
        blocks = db.memory_stores().blocks()
        final = await blocks.get("counter")
        history = await blocks.history("counter")
    assert [r["done"] for r in results] == [CALLS] * PROCESSES
    assert final.value == str(PROCESSES * CALLS)  # every increment landed once
    assert final.version == 1 + PROCESSES * CALLS
    # each version is its predecessor plus one: no write was based on a value it did not read
    assert [int(v.value) for v in history] == list(range(PROCESSES * CALLS + 1))
    assert sorted({v.agent_id for v in history[1:]}) == [f"p{k}" for k in range(PROCESSES)]
