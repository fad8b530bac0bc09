"""Several processes changing one PostgreSQL task board at once: no update is lost, the retry
bound holds across processes (each a real interpreter with its own pool)."""

from __future__ import annotations

from pathlib import Path

from axio_context.memory import TaskStatus
from axio_context_postgres import connect
from axio_context_postgres.memory import PostgresTaskStore
from tests.support.processes import run_together

WORKER = Path(__file__).resolve().parent / "task_worker.py"
PROCESSES = 4
CALLS = 25
MAX_RETRIES = 60  # fewer than PROCESSES * CALLS: the bound must stop exactly this many


def _run(url: str, list_id: str, task_id: str) -> list[dict[str, object]]:
    return run_together([[str(WORKER), url, list_id, task_id, f"p{k}", str(CALLS)] for k in range(PROCESSES)])


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
