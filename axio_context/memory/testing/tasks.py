"""The :class:`~axio_context.memory.TaskStore` contract."""

from __future__ import annotations

import pytest

from ..errors import TaskStatusError
from ..tasks import TaskStatus
from .factory import MemoryFactory

__all__ = ["TaskStoreContract"]


class TaskStoreContract:
    """What every task store does; subclass it and provide ``memory``."""

    @pytest.fixture
    def memory(self) -> MemoryFactory:
        raise NotImplementedError("provide a `memory` fixture returning a MemoryFactory")

    async def test_create_and_read(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        board = await store.create_task_list("conv", [" plan ", "", "build", "  "], agent_label="Lead")
        assert [(t.title, t.status, t.order, t.retry_count) for t in board.tasks] == [
            ("plan", TaskStatus.PLANNED, 0, 0),
            ("build", TaskStatus.PLANNED, 1, 0),
        ]
        assert (board.conversation_id, board.agent_id, board.agent_label, board.max_retries) == (
            "conv",
            "",
            "Lead",
            3,
        )
        assert board.created_at
        assert await store.get_task_list(board.id) == board
        assert await store.get_task_list("nope") is None

    async def test_boards_per_agent(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        sub = await store.create_task_list("conv", ["x"], agent_id="sub", parent_agent_id="root")
        assert await store.get_by_conversation("conv") == sub  # no root board: the first one
        root = await store.create_task_list("conv", ["y"])
        assert await store.get_by_conversation("conv") == root
        assert [b.id for b in await store.get_boards_by_conversation("conv")] == [root.id, sub.id]
        assert sub.parent_agent_id == "root"
        assert await store.get_by_conversation("other") is None
        assert {b.id for b in await store.list_task_lists()} == {root.id, sub.id}

    async def test_create_again_replaces_the_board(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        first = await store.create_task_list("conv", ["a"])
        second = await store.create_task_list("conv", ["b", "c"], max_retries=1)
        assert second.id != first.id
        assert second.created_at == first.created_at
        assert await store.get_task_list(first.id) is None
        assert [t.title for t in (await store.get_boards_by_conversation("conv"))[0].tasks] == ["b", "c"]

    async def test_update_status(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        board = await store.create_task_list("conv", ["a"])
        task = board.tasks[0]
        done = await store.update_status(board.id, task.id, TaskStatus.BLOCKED, "waiting on API key")
        assert done is not None and (done.status, done.note) == (TaskStatus.BLOCKED, "waiting on API key")
        again = await store.update_status(board.id, task.id, "in_progress")
        assert again is not None and (again.status, again.note) == (
            TaskStatus.IN_PROGRESS,
            "waiting on API key",
        )
        assert await store.update_status(board.id, "nope", "failed") is None
        assert await store.update_status("nope", task.id, "failed") is None

    async def test_unknown_status_changes_nothing(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        board = await store.create_task_list("conv", ["a"])
        with pytest.raises(TaskStatusError, match="'done'"):
            await store.update_status(board.id, board.tasks[0].id, "done")
        assert await store.get_task_list(board.id) == board
        with pytest.raises(TaskStatusError):
            await store.settle_conversation("conv", TaskStatus.IN_PROGRESS)

    async def test_add_and_delete_tasks(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        board = await store.create_task_list("conv", ["a", "b"])
        new = await store.add_tasks(board.id, ["c", " ", "d"])
        assert [(t.title, t.order) for t in new] == [("c", 2), ("d", 3)]
        assert await store.delete_task(board.id, board.tasks[0].id) is True
        assert await store.delete_task(board.id, board.tasks[0].id) is False
        more = await store.add_tasks(board.id, ["e"])
        assert more[0].order == 4
        after = await store.get_task_list(board.id)
        assert after is not None and [t.title for t in after.tasks] == ["b", "c", "d", "e"]
        assert await store.add_tasks("nope", ["x"]) == []

    async def test_retry_is_bounded(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        board = await store.create_task_list("conv", ["flaky"], max_retries=2)
        tid = board.tasks[0].id
        first = await store.increment_retry(board.id, tid)
        assert first is not None and (first.retry_count, first.status) == (1, TaskStatus.IN_PROGRESS)
        second = await store.increment_retry(board.id, tid)
        assert second is not None and second.retry_count == 2
        assert await store.increment_retry(board.id, tid) is None
        after = await store.get_task_list(board.id)
        assert after is not None and after.tasks[0].retry_count == 2
        assert await store.increment_retry(board.id, "nope") is None

    async def test_force_retry_overrides_the_bound(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        board = await store.create_task_list("conv", ["flaky"], max_retries=1)
        tid = board.tasks[0].id
        await store.increment_retry(board.id, tid)
        await store.update_status(board.id, tid, TaskStatus.FAILED, "gave up")
        assert await store.increment_retry(board.id, tid) is None
        forced = await store.force_retry(board.id, tid)
        assert forced is not None
        assert (forced.retry_count, forced.status, forced.note) == (0, TaskStatus.IN_PROGRESS, "")
        again = await store.increment_retry(board.id, tid)
        assert again is not None and again.retry_count == 1
        assert await store.force_retry(board.id, "nope") is None

    async def test_settle_conversation(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        root = await store.create_task_list("conv", ["a", "b", "c"])
        sub = await store.create_task_list("conv", ["d"], agent_id="sub")
        idle = await store.create_task_list("conv", ["e"], agent_id="idle")
        other = await store.create_task_list("other", ["f"])
        await store.update_status(root.id, root.tasks[0].id, TaskStatus.IN_PROGRESS)
        await store.update_status(root.id, root.tasks[1].id, TaskStatus.BLOCKED)
        await store.update_status(sub.id, sub.tasks[0].id, TaskStatus.IN_PROGRESS)
        await store.update_status(other.id, other.tasks[0].id, TaskStatus.IN_PROGRESS)
        changed = await store.settle_conversation("conv")
        assert [b.id for b in changed] == [root.id, sub.id]
        assert [t.status for t in changed[0].tasks] == [
            TaskStatus.SUCCEEDED,
            TaskStatus.BLOCKED,
            TaskStatus.PLANNED,
        ]
        assert changed[1].tasks[0].status == TaskStatus.SUCCEEDED
        assert await store.get_task_list(idle.id) == idle
        untouched = await store.get_task_list(other.id)
        assert untouched is not None and untouched.tasks[0].status == TaskStatus.IN_PROGRESS
        assert await store.settle_conversation("conv") == []
        failed = await store.settle_conversation("other", TaskStatus.FAILED)
        assert failed[0].tasks[0].status == TaskStatus.FAILED

    async def test_rename(self, memory: MemoryFactory) -> None:
        store = await memory.tasks()
        board = await store.create_task_list("conv", ["a"])
        renamed = await store.update_task_title(board.id, board.tasks[0].id, "  better  ")
        assert renamed is not None and renamed.title == "better"
        assert await store.update_task_title(board.id, "nope", "x") is None
