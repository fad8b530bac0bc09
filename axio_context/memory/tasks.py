"""The task store (ravi's ``TaskStore`` / ``GlobalTaskStore``): an agent's Kanban boards.

A :class:`TaskList` (board) belongs to one ``(conversation_id, agent_id)``; creating a board for
a key that has one replaces it (its ``created_at`` stays: the board stays anchored to the turn
that first made it). Its :class:`Task` s move through :class:`TaskStatus`.

``increment_retry`` is the agent's bounded retry: it counts one more attempt and sets the task
in progress, or returns None once ``retry_count`` reached the board's ``max_retries``.
``force_retry`` is a person's override: the count goes back to 0 and the task is in progress
again. ``settle_conversation`` runs when a run ends: tasks still in progress on the
conversation's boards become a final state (succeeded by default); others are left alone.
A status that is not a :class:`TaskStatus` is a :class:`~.errors.TaskStatusError`. Operations
on a board or task that does not exist return None / False / [] as ravi's do.

:class:`GlobalTaskStore` holds the process-wide default store: an :class:`InMemoryTaskStore`
until :meth:`GlobalTaskStore.set` swaps in another (a SQLite one, say).
"""

from __future__ import annotations

import asyncio
import enum
import time
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

import msgspec

from ..transcript import format_time
from .errors import InvalidInputError, TaskStatusError

__all__ = [
    "FINAL_STATUSES",
    "GlobalTaskStore",
    "InMemoryTaskStore",
    "Task",
    "TaskList",
    "TaskStatus",
    "TaskStore",
    "check_final",
    "check_max_retries",
    "parse_status",
]


class TaskStatus(enum.StrEnum):
    """Where a task stands."""

    PLANNED = "planned"
    IN_PROGRESS = "in_progress"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    BLOCKED = "blocked"
    ABANDONED = "abandoned"


#: The states ``settle_conversation`` may move an in-progress task to.
FINAL_STATUSES: Final = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.ABANDONED})


class Task(msgspec.Struct, frozen=True):
    """One card of a board: ``order`` is its place, ``retry_count`` the agent's retries so far."""

    id: str
    title: str
    status: TaskStatus = TaskStatus.PLANNED
    order: int = 0
    retry_count: int = 0
    note: str = ""


class TaskList(msgspec.Struct, frozen=True):
    """A board of one ``(conversation_id, agent_id)``: its tasks in order."""

    id: str
    conversation_id: str
    max_retries: int = 3
    agent_id: str = ""
    agent_label: str = ""
    parent_agent_id: str | None = None
    created_at: str = ""
    tasks: list[Task] = msgspec.field(default_factory=list)


@runtime_checkable
class TaskStore(Protocol):
    """Kanban boards keyed by ``(conversation_id, agent_id)`` (ravi's ``TaskStore``).

    A protocol for typing and ``isinstance``; called, ``TaskStore()`` gives a new
    :class:`InMemoryTaskStore`, as ravi's in-memory ``TaskStore()`` does.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> TaskStore:
        if cls is TaskStore:
            return InMemoryTaskStore(*args, **kwargs)
        return super().__new__(cls)

    async def create_task_list(
        self,
        conversation_id: str,
        task_titles: Sequence[str],
        *,
        agent_id: str = "",
        agent_label: str = "",
        parent_agent_id: str | None = None,
        max_retries: int = 3,
    ) -> TaskList:
        """A new board for the key (replacing its old one), one planned task per non-blank title."""
        ...

    async def get_task_list(self, task_list_id: str) -> TaskList | None:
        """The board with this id, or None."""
        ...

    async def get_by_conversation(self, conversation_id: str) -> TaskList | None:
        """The conversation's root board (agent_id ''), else its first board, else None."""
        ...

    async def get_boards_by_conversation(self, conversation_id: str) -> list[TaskList]:
        """Every board of the conversation, by agent id."""
        ...

    async def list_task_lists(self, *, limit: int | None = None) -> list[TaskList]:
        """Every board, newest first."""
        ...

    async def settle_conversation(
        self, conversation_id: str, status: TaskStatus = TaskStatus.SUCCEEDED
    ) -> list[TaskList]:
        """Move the conversation's in-progress tasks to ``status``; returns the boards changed."""
        ...

    async def update_status(
        self, task_list_id: str, task_id: str, status: TaskStatus | str, note: str = ""
    ) -> Task | None:
        """Set a task's status (and note, when given); None if the task does not exist."""
        ...

    async def add_tasks(self, task_list_id: str, titles: Sequence[str]) -> list[Task]:
        """Append planned tasks to a board; [] if it does not exist."""
        ...

    async def delete_task(self, task_list_id: str, task_id: str) -> bool:
        """Remove a task; True if it existed."""
        ...

    async def increment_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """One more retry, in progress; None at the board's ``max_retries`` or if absent."""
        ...

    async def force_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """A person's override: retry count 0, in progress, note cleared; None if absent."""
        ...

    async def update_task_title(self, task_list_id: str, task_id: str, title: str) -> Task | None:
        """Rename a task; None if it does not exist."""
        ...


def parse_status(status: TaskStatus | str) -> TaskStatus:
    """``status`` as a :class:`TaskStatus`; :class:`TaskStatusError` if it is none of them."""
    try:
        return TaskStatus(status)
    except ValueError:
        known = ", ".join(s.value for s in TaskStatus)
        raise TaskStatusError(f"unknown task status {status!r}; known: {known}") from None


def check_final(status: TaskStatus | str) -> TaskStatus:
    """``status`` if a settled task may end in it."""
    parsed = parse_status(status)
    if parsed not in FINAL_STATUSES:
        finals = ", ".join(sorted(s.value for s in FINAL_STATUSES))
        raise TaskStatusError(
            f"a conversation settles its tasks to a final status ({finals}), not {parsed.value!r}"
        )
    return parsed


def check_max_retries(max_retries: int) -> int:
    """``max_retries`` if it is a usable bound."""
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InvalidInputError(f"max_retries is a whole number >= 0, got {max_retries!r}")
    return max_retries


def check_text(value: str, what: str) -> str:
    """``value`` if it is a string."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} is a string, got {type(value).__name__}")
    return value


def titles_of(titles: Sequence[str]) -> list[str]:
    """The non-blank titles, stripped (ravi drops blank ones)."""
    if isinstance(titles, str):
        raise InvalidInputError("task titles are a list of strings, not one string")
    return [t.strip() for t in (check_text(t, "a task title") for t in titles) if t.strip()]


def new_id() -> str:
    """A fresh board or task id."""
    return str(uuid.uuid4())


def now_iso() -> str:
    """The current UTC time as the boards show it."""
    return format_time(time.time_ns() // 1_000_000)


class InMemoryTaskStore:
    """:class:`TaskStore` in dicts (ravi's in-memory ``TaskStore``), one asyncio lock for writes."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._lists: dict[str, TaskList] = {}
        self._by_key: dict[tuple[str, str], str] = {}

    async def create_task_list(
        self,
        conversation_id: str,
        task_titles: Sequence[str],
        *,
        agent_id: str = "",
        agent_label: str = "",
        parent_agent_id: str | None = None,
        max_retries: int = 3,
    ) -> TaskList:
        """A new board for the key (replacing its old one), one planned task per non-blank title."""
        check_text(conversation_id, "conversation_id")
        check_text(agent_id, "agent_id")
        check_max_retries(max_retries)
        titles = titles_of(task_titles)
        async with self._lock:
            created = now_iso()
            old = self._by_key.get((conversation_id, agent_id))
            if old is not None:
                created = self._lists.pop(old).created_at
            board = TaskList(
                id=new_id(),
                conversation_id=conversation_id,
                max_retries=max_retries,
                agent_id=agent_id,
                agent_label=agent_label,
                parent_agent_id=parent_agent_id,
                created_at=created,
                tasks=[Task(new_id(), t, TaskStatus.PLANNED, i) for i, t in enumerate(titles)],
            )
            self._lists[board.id] = board
            self._by_key[(conversation_id, agent_id)] = board.id
            return board

    async def get_task_list(self, task_list_id: str) -> TaskList | None:
        """The board with this id, or None."""
        return self._lists.get(task_list_id)

    async def get_by_conversation(self, conversation_id: str) -> TaskList | None:
        """The conversation's root board (agent_id ''), else its first board, else None."""
        boards = await self.get_boards_by_conversation(conversation_id)
        return boards[0] if boards else None

    async def get_boards_by_conversation(self, conversation_id: str) -> list[TaskList]:
        """Every board of the conversation, by agent id."""
        keys = sorted(k for k in self._by_key if k[0] == conversation_id)
        return [self._lists[self._by_key[k]] for k in keys]

    async def list_task_lists(self, *, limit: int | None = None) -> list[TaskList]:
        """Every board, newest first."""
        boards = sorted(self._lists.values(), key=lambda b: (b.created_at, b.id), reverse=True)
        return boards if limit is None else boards[: max(limit, 0)]

    async def settle_conversation(
        self, conversation_id: str, status: TaskStatus = TaskStatus.SUCCEEDED
    ) -> list[TaskList]:
        """Move the conversation's in-progress tasks to ``status``; returns the boards changed."""
        final = check_final(status)
        async with self._lock:
            changed = []
            for board in await self.get_boards_by_conversation(conversation_id):
                if any(t.status is TaskStatus.IN_PROGRESS for t in board.tasks):
                    tasks = [
                        msgspec.structs.replace(t, status=final) if t.status is TaskStatus.IN_PROGRESS else t
                        for t in board.tasks
                    ]
                    board = self._lists[board.id] = msgspec.structs.replace(board, tasks=tasks)
                    changed.append(board)
            return changed

    def _replace_task(self, task_list_id: str, task_id: str, **changes: object) -> Task | None:
        board = self._lists.get(task_list_id)
        if board is None:
            return None
        for i, task in enumerate(board.tasks):
            if task.id == task_id:
                new = msgspec.structs.replace(task, **changes)
                tasks = list(board.tasks)
                tasks[i] = new
                self._lists[task_list_id] = msgspec.structs.replace(board, tasks=tasks)
                return new
        return None

    def _task(self, task_list_id: str, task_id: str) -> tuple[TaskList, Task] | None:
        board = self._lists.get(task_list_id)
        if board is None:
            return None
        for task in board.tasks:
            if task.id == task_id:
                return board, task
        return None

    async def update_status(
        self, task_list_id: str, task_id: str, status: TaskStatus | str, note: str = ""
    ) -> Task | None:
        """Set a task's status (and note, when given); None if the task does not exist."""
        parsed = parse_status(status)
        check_text(note, "note")
        async with self._lock:
            found = self._task(task_list_id, task_id)
            if found is None:
                return None
            return self._replace_task(task_list_id, task_id, status=parsed, note=note or found[1].note)

    async def add_tasks(self, task_list_id: str, titles: Sequence[str]) -> list[Task]:
        """Append planned tasks to a board; [] if it does not exist."""
        clean = titles_of(titles)
        async with self._lock:
            board = self._lists.get(task_list_id)
            if board is None:
                return []
            start = max((t.order for t in board.tasks), default=-1) + 1
            new = [Task(new_id(), t, TaskStatus.PLANNED, start + i) for i, t in enumerate(clean)]
            self._lists[task_list_id] = msgspec.structs.replace(board, tasks=[*board.tasks, *new])
            return new

    async def delete_task(self, task_list_id: str, task_id: str) -> bool:
        """Remove a task; True if it existed."""
        async with self._lock:
            board = self._lists.get(task_list_id)
            if board is None:
                return False
            tasks = [t for t in board.tasks if t.id != task_id]
            if len(tasks) == len(board.tasks):
                return False
            self._lists[task_list_id] = msgspec.structs.replace(board, tasks=tasks)
            return True

    async def increment_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """One more retry, in progress; None at the board's ``max_retries`` or if absent."""
        async with self._lock:
            found = self._task(task_list_id, task_id)
            if found is None or found[1].retry_count >= found[0].max_retries:
                return None
            return self._replace_task(
                task_list_id, task_id, retry_count=found[1].retry_count + 1, status=TaskStatus.IN_PROGRESS
            )

    async def force_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """A person's override: retry count 0, in progress, note cleared; None if absent."""
        async with self._lock:
            return self._replace_task(
                task_list_id, task_id, retry_count=0, status=TaskStatus.IN_PROGRESS, note=""
            )

    async def update_task_title(self, task_list_id: str, task_id: str, title: str) -> Task | None:
        """Rename a task; None if it does not exist."""
        check_text(title, "a task title")
        async with self._lock:
            return self._replace_task(task_list_id, task_id, title=title.strip())


class GlobalTaskStore:
    """The process-wide default :class:`TaskStore` (ravi's singleton), swappable."""

    _instance: ClassVar[TaskStore | None] = None

    @classmethod
    def get(cls) -> TaskStore:
        """The current default store: an :class:`InMemoryTaskStore` until :meth:`set` is called."""
        if cls._instance is None:
            cls._instance = InMemoryTaskStore()
        return cls._instance

    @classmethod
    def set(cls, store: TaskStore) -> None:
        """Make ``store`` the default from now on (e.g. a SQLite store at start-up)."""
        cls._instance = store

    @classmethod
    def reset(cls) -> None:
        """Forget the default; the next :meth:`get` makes a fresh in-memory store."""
        cls._instance = None
