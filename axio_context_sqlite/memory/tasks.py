"""The task store in the SQLite file: :class:`SQLiteTaskStore`, ravi's ``TaskStore``.

A board is a ``task_lists`` row and each task a ``tasks`` row. Every change is one
``BEGIN IMMEDIATE`` transaction, and the ones that depend on what is stored are a single
conditional statement (``increment_retry`` is ``UPDATE ... WHERE retry_count < max_retries``),
so processes sharing the file never lose each other's updates: the write lock orders them and
each one sees the last committed state. ``GlobalTaskStore.set(SQLiteTaskStore(conn))`` makes it
the process-wide default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import aiosqlite

from axio_context.memory.tasks import (
    Task,
    TaskList,
    TaskStatus,
    check_final,
    check_max_retries,
    check_text,
    new_id,
    parse_status,
    titles_of,
)
from axio_context.transcript import format_time

from ..store.calls import run
from ..store.keys import now_ms
from ..store.transactions import read_tx, write_tx

__all__ = ["SQLiteTaskStore"]

_TASK: Final = "id, title, status, ord, retry_count, note"
_LIST: Final = "id, conversation_id, max_retries, agent_id, agent_label, parent_agent_id, created_at"


def _task(row: Any) -> Task:
    return Task(str(row[0]), str(row[1]), parse_status(str(row[2])), int(row[3]), int(row[4]), str(row[5]))


def _board(c: Any, list_id: str) -> TaskList | None:
    row = c.execute(f"SELECT {_LIST} FROM task_lists WHERE id = ?", (list_id,)).fetchone()
    if row is None:
        return None
    tasks = [
        _task(r) for r in c.execute(f"SELECT {_TASK} FROM tasks WHERE list_id = ? ORDER BY ord", (list_id,))
    ]
    return TaskList(
        id=str(row[0]),
        conversation_id=str(row[1]),
        max_retries=int(row[2]),
        agent_id=str(row[3]),
        agent_label=str(row[4]),
        parent_agent_id=None if row[5] is None else str(row[5]),
        created_at=format_time(int(row[6])),
        tasks=tasks,
    )


def _get(c: Any, list_id: str) -> TaskList | None:
    with read_tx(c):
        return _board(c, list_id)


def _create(
    c: Any,
    conversation_id: str,
    agent_id: str,
    agent_label: str,
    parent_agent_id: str | None,
    max_retries: int,
    titles: list[str],
) -> TaskList:
    now = now_ms()
    list_id = new_id()
    with write_tx(c):
        old = c.execute(
            "SELECT id, created_at FROM task_lists WHERE conversation_id = ? AND agent_id = ?",
            (conversation_id, agent_id),
        ).fetchone()
        created = now if old is None else int(old[1])  # the board stays anchored to its first turn
        if old is not None:
            c.execute("DELETE FROM tasks WHERE list_id = ?", (old[0],))
            c.execute("DELETE FROM task_lists WHERE id = ?", (old[0],))
        c.execute(
            "INSERT INTO task_lists (id, conversation_id, agent_id, agent_label, parent_agent_id,"
            " max_retries, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (list_id, conversation_id, agent_id, agent_label, parent_agent_id, max_retries, created, now),
        )
        c.executemany(
            "INSERT INTO tasks (list_id, id, title, status, ord) VALUES (?, ?, ?, ?, ?)",
            [(list_id, new_id(), t, TaskStatus.PLANNED.value, i) for i, t in enumerate(titles)],
        )
        board = _board(c, list_id)
    assert board is not None
    return board


def _boards(c: Any, conversation_id: str) -> list[TaskList]:
    with read_tx(c):
        ids = [
            r[0]
            for r in c.execute(
                "SELECT id FROM task_lists WHERE conversation_id = ? ORDER BY agent_id", (conversation_id,)
            ).fetchall()
        ]
        return [b for b in (_board(c, i) for i in ids) if b is not None]


def _all(c: Any, limit: int) -> list[TaskList]:
    with read_tx(c):
        ids = [
            r[0]
            for r in c.execute(
                "SELECT id FROM task_lists ORDER BY created_at DESC, id DESC LIMIT ?", (limit,)
            )
        ]
        return [b for b in (_board(c, i) for i in ids) if b is not None]


def _settle(c: Any, conversation_id: str, status: str) -> list[TaskList]:
    with write_tx(c):
        changed = {
            str(r[0])
            for r in c.execute(
                "UPDATE tasks SET status = ? WHERE status = ? AND list_id IN"
                " (SELECT id FROM task_lists WHERE conversation_id = ?) RETURNING list_id",
                (status, TaskStatus.IN_PROGRESS.value, conversation_id),
            ).fetchall()
        }
        c.executemany("UPDATE task_lists SET updated_at = ? WHERE id = ?", [(now_ms(), i) for i in changed])
        boards = [_board(c, i) for i in changed]
    return sorted((b for b in boards if b is not None), key=lambda b: b.agent_id)


def _change(
    c: Any, list_id: str, task_id: str, assignments: str, params: tuple[Any, ...], guard: str = ""
) -> Task | None:
    """One conditional UPDATE of a task, in its own transaction; the task as it now is, or None."""
    with write_tx(c):
        row = c.execute(
            f"UPDATE tasks SET {assignments} WHERE list_id = ? AND id = ?{guard} RETURNING {_TASK}",
            (*params, list_id, task_id),
        ).fetchone()
        if row is not None:
            c.execute("UPDATE task_lists SET updated_at = ? WHERE id = ?", (now_ms(), list_id))
    return None if row is None else _task(row)


def _add(c: Any, list_id: str, titles: list[str]) -> list[Task]:
    with write_tx(c):
        if c.execute("SELECT 1 FROM task_lists WHERE id = ?", (list_id,)).fetchone() is None:
            return []
        start = int(
            c.execute(
                "SELECT COALESCE(MAX(ord), -1) + 1 FROM tasks WHERE list_id = ?", (list_id,)
            ).fetchone()[0]
        )
        new = [Task(new_id(), t, TaskStatus.PLANNED, start + i) for i, t in enumerate(titles)]
        c.executemany(
            "INSERT INTO tasks (list_id, id, title, status, ord) VALUES (?, ?, ?, ?, ?)",
            [(list_id, t.id, t.title, t.status.value, t.order) for t in new],
        )
        c.execute("UPDATE task_lists SET updated_at = ? WHERE id = ?", (now_ms(), list_id))
    return new


def _delete(c: Any, list_id: str, task_id: str) -> bool:
    with write_tx(c):
        return (
            c.execute(
                "DELETE FROM tasks WHERE list_id = ? AND id = ? RETURNING id", (list_id, task_id)
            ).fetchone()
            is not None
        )


class SQLiteTaskStore:
    """:class:`~axio_context.memory.TaskStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it), safe across processes."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

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
        check_text(agent_label, "agent_label")
        check_max_retries(max_retries)
        titles = titles_of(task_titles)
        return await run(
            self._conn, _create, conversation_id, agent_id, agent_label, parent_agent_id, max_retries, titles
        )

    async def get_task_list(self, task_list_id: str) -> TaskList | None:
        """The board with this id, or None."""
        return await run(self._conn, _get, task_list_id)

    async def get_by_conversation(self, conversation_id: str) -> TaskList | None:
        """The conversation's root board (agent_id ''), else its first board, else None."""
        boards = await run(self._conn, _boards, conversation_id)
        return boards[0] if boards else None

    async def get_boards_by_conversation(self, conversation_id: str) -> list[TaskList]:
        """Every board of the conversation, by agent id."""
        return await run(self._conn, _boards, conversation_id)

    async def list_task_lists(self, *, limit: int | None = None) -> list[TaskList]:
        """Every board, newest first."""
        return await run(self._conn, _all, -1 if limit is None else max(limit, 0))

    async def settle_conversation(
        self, conversation_id: str, status: TaskStatus = TaskStatus.SUCCEEDED
    ) -> list[TaskList]:
        """Move the conversation's in-progress tasks to ``status``; returns the boards changed."""
        final = check_final(status)
        return await run(self._conn, _settle, conversation_id, final.value)

    async def update_status(
        self, task_list_id: str, task_id: str, status: TaskStatus | str, note: str = ""
    ) -> Task | None:
        """Set a task's status (and note, when given); None if the task does not exist."""
        parsed = parse_status(status)
        check_text(note, "note")
        return await run(
            self._conn,
            _change,
            task_list_id,
            task_id,
            "status = ?, note = CASE WHEN ? = '' THEN note ELSE ? END",
            (parsed.value, note, note),
        )

    async def add_tasks(self, task_list_id: str, titles: Sequence[str]) -> list[Task]:
        """Append planned tasks to a board; [] if it does not exist."""
        return await run(self._conn, _add, task_list_id, titles_of(titles))

    async def delete_task(self, task_list_id: str, task_id: str) -> bool:
        """Remove a task; True if it existed."""
        return await run(self._conn, _delete, task_list_id, task_id)

    async def increment_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """One more retry, in progress; None at the board's ``max_retries`` or if absent."""
        return await run(
            self._conn,
            _change,
            task_list_id,
            task_id,
            "retry_count = retry_count + 1, status = ?",
            (TaskStatus.IN_PROGRESS.value,),
            " AND retry_count < (SELECT max_retries FROM task_lists WHERE id = tasks.list_id)",
        )

    async def force_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """A person's override: retry count 0, in progress, note cleared; None if absent."""
        return await run(
            self._conn,
            _change,
            task_list_id,
            task_id,
            "retry_count = 0, status = ?, note = ''",
            (TaskStatus.IN_PROGRESS.value,),
        )

    async def update_task_title(self, task_list_id: str, task_id: str, title: str) -> Task | None:
        """Rename a task; None if it does not exist."""
        check_text(title, "a task title")
        return await run(self._conn, _change, task_list_id, task_id, "title = ?", (title.strip(),))
