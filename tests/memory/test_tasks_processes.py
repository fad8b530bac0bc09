"""Several processes changing one task board at once: no update is lost, the retry bound holds."""

from __future__ import annotations

from pathlib import Path

from axio_context.memory import GlobalTaskStore, InMemoryTaskStore, TaskStatus
from axio_context_sqlite import connect
from axio_context_sqlite.memory import SQLiteTaskStore
from tests.support.processes import run_together

WORKER = Path(__file__).resolve().parent / "task_worker.py"
PROCESSES = 4
CALLS = 40
MAX_RETRIES = 100  # fewer than PROCESSES * CALLS: the bound must stop exactly this many


def _run(db: Path, list_id: str, task_id: str) -> list[dict[str, object]]:
    return run_together(
        [[str(WORKER), str(db), list_id, task_id, f"p{k}", str(CALLS)] for k in range(PROCESSES)]
    )


async def test_processes_share_one_board(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    async with connect(db) as conn:
        board = await SQLiteTaskStore(conn).create_task_list("conv", ["shared"], max_retries=MAX_RETRIES)
    target = board.tasks[0].id

    results = _run(db, board.id, target)

    async with connect(db) as conn:
        after = await SQLiteTaskStore(conn).get_task_list(board.id)
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


async def test_global_task_store_is_swappable(tmp_path: Path) -> None:
    GlobalTaskStore.reset()
    try:
        default = GlobalTaskStore.get()
        assert isinstance(default, InMemoryTaskStore)
        assert GlobalTaskStore.get() is default  # one per process
        async with connect(tmp_path / "g.db") as conn:
            store = SQLiteTaskStore(conn)
            GlobalTaskStore.set(store)
            assert GlobalTaskStore.get() is store
            board = await GlobalTaskStore.get().create_task_list("c", ["t"])
            assert await store.get_task_list(board.id) == board
        GlobalTaskStore.reset()
        assert GlobalTaskStore.get() is not default
    finally:
        GlobalTaskStore.reset()
