"""The task store on PostgreSQL: :class:`PostgresTaskStore`, ravi's ``TaskStore``.

A board is a ``task_lists`` row and each task a ``tasks`` row. Every change is one transaction,
and the ones that depend on what is stored are a single conditional statement
(``increment_retry`` is ``UPDATE ... WHERE retry_count < max_retries``): the row lock orders
concurrent writers on any number of hosts, and each sees the last committed state, so no update
is lost. Replacing a board locks its ``(conversation, agent)`` key first (``INSERT ... ON
CONFLICT`` semantics through an advisory lock), so two agents recreating it at once leave one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

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

from ..connection import Pool
from .common import now_ms, transaction

__all__ = ["PostgresTaskStore"]

_TASK: Final = "id, title, status, ord, retry_count, note"
_LIST: Final = "id, conversation_id, max_retries, agent_id, agent_label, parent_agent_id, created_at"


def _task(row: Any) -> Task:
    return Task(str(row[0]), str(row[1]), parse_status(str(row[2])), int(row[3]), int(row[4]), str(row[5]))


async def _boards(conn: Any, where: str, *args: Any) -> list[TaskList]:
    """The boards a condition on ``task_lists`` picks (in its ORDER BY), with their tasks."""
    lists = await conn.fetch(f"SELECT {_LIST} FROM task_lists {where}", *args)
    if not lists:
        return []
    rows = await conn.fetch(
        f"SELECT list_id, {_TASK} FROM tasks WHERE list_id = ANY($1::text[]) ORDER BY list_id, ord",
        [r[0] for r in lists],
    )
    tasks: dict[str, list[Task]] = {}
    for r in rows:
        tasks.setdefault(r[0], []).append(_task(r[1:]))
    return [
        TaskList(
            id=str(r[0]),
            conversation_id=str(r[1]),
            max_retries=int(r[2]),
            agent_id=str(r[3]),
            agent_label=str(r[4]),
            parent_agent_id=None if r[5] is None else str(r[5]),
            created_at=format_time(int(r[6])),
            tasks=tasks.get(r[0], []),
        )
        for r in lists
    ]


class PostgresTaskStore:
    """:class:`~axio_context.memory.TaskStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it), safe across processes and hosts."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

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
        now = now_ms()
        list_id = new_id()
        async with transaction(self._pool) as conn:
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", conversation_id, agent_id
            )
            old = await conn.fetchrow(
                "DELETE FROM task_lists WHERE conversation_id = $1 AND agent_id = $2 RETURNING created_at",
                conversation_id,
                agent_id,
            )
            created = now if old is None else int(old[0])  # the board stays anchored to its first turn
            await conn.execute(
                "INSERT INTO task_lists (id, conversation_id, agent_id, agent_label, parent_agent_id,"
                " max_retries, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                list_id,
                conversation_id,
                agent_id,
                agent_label,
                parent_agent_id,
                max_retries,
                created,
                now,
            )
            await conn.executemany(
                "INSERT INTO tasks (list_id, id, title, status, ord) VALUES ($1, $2, $3, $4, $5)",
                [(list_id, new_id(), t, TaskStatus.PLANNED.value, i) for i, t in enumerate(titles)],
            )
            [board] = await _boards(conn, "WHERE id = $1", list_id)
        return board

    async def get_task_list(self, task_list_id: str) -> TaskList | None:
        """The board with this id, or None."""
        async with transaction(self._pool, readonly=True) as conn:
            found = await _boards(conn, "WHERE id = $1", task_list_id)
        return found[0] if found else None

    async def get_by_conversation(self, conversation_id: str) -> TaskList | None:
        """The conversation's root board (agent_id ''), else its first board, else None."""
        boards = await self.get_boards_by_conversation(conversation_id)
        return boards[0] if boards else None

    async def get_boards_by_conversation(self, conversation_id: str) -> list[TaskList]:
        """Every board of the conversation, by agent id."""
        async with transaction(self._pool, readonly=True) as conn:
            return await _boards(
                conn, 'WHERE conversation_id = $1 ORDER BY agent_id COLLATE "C"', conversation_id
            )

    async def list_task_lists(self, *, limit: int | None = None) -> list[TaskList]:
        """Every board, newest first."""
        async with transaction(self._pool, readonly=True) as conn:
            return await _boards(
                conn, "ORDER BY created_at DESC, id DESC LIMIT $1", None if limit is None else max(limit, 0)
            )

    async def settle_conversation(
        self, conversation_id: str, status: TaskStatus = TaskStatus.SUCCEEDED
    ) -> list[TaskList]:
        """Move the conversation's in-progress tasks to ``status``; returns the boards changed."""
        final = check_final(status)
        async with transaction(self._pool) as conn:
            changed = await conn.fetch(
                "UPDATE tasks SET status = $1 WHERE status = $2 AND list_id IN"
                " (SELECT id FROM task_lists WHERE conversation_id = $3) RETURNING list_id",
                final.value,
                TaskStatus.IN_PROGRESS.value,
                conversation_id,
            )
            ids = sorted({r[0] for r in changed})
            await conn.execute(
                "UPDATE task_lists SET updated_at = $1 WHERE id = ANY($2::text[])", now_ms(), ids
            )
            return await _boards(conn, 'WHERE id = ANY($1::text[]) ORDER BY agent_id COLLATE "C"', ids)

    async def _change(
        self, list_id: str, task_id: str, assignments: str, params: tuple[Any, ...], guard: str = ""
    ) -> Task | None:
        """One conditional UPDATE of a task (``$3``... are ``params``); the task as it now is."""
        async with transaction(self._pool) as conn:
            row = await conn.fetchrow(
                f"UPDATE tasks SET {assignments} WHERE list_id = $1 AND id = $2{guard} RETURNING {_TASK}",
                list_id,
                task_id,
                *params,
            )
            if row is not None:
                await conn.execute("UPDATE task_lists SET updated_at = $1 WHERE id = $2", now_ms(), list_id)
        return None if row is None else _task(row)

    async def update_status(
        self, task_list_id: str, task_id: str, status: TaskStatus | str, note: str = ""
    ) -> Task | None:
        """Set a task's status (and note, when given); None if the task does not exist."""
        parsed = parse_status(status)
        check_text(note, "note")
        return await self._change(
            task_list_id,
            task_id,
            "status = $3, note = CASE WHEN $4 = '' THEN note ELSE $4 END",
            (parsed.value, note),
        )

    async def add_tasks(self, task_list_id: str, titles: Sequence[str]) -> list[Task]:
        """Append planned tasks to a board; [] if it does not exist."""
        checked = titles_of(titles)
        async with transaction(self._pool) as conn:
            # Locking the board row orders concurrent appenders, so their orders never collide.
            if await conn.fetchval("SELECT 1 FROM task_lists WHERE id = $1 FOR UPDATE", task_list_id) is None:
                return []
            start = int(
                await conn.fetchval(
                    "SELECT COALESCE(MAX(ord), -1) + 1 FROM tasks WHERE list_id = $1", task_list_id
                )
            )
            new = [Task(new_id(), t, TaskStatus.PLANNED, start + i) for i, t in enumerate(checked)]
            await conn.executemany(
                "INSERT INTO tasks (list_id, id, title, status, ord) VALUES ($1, $2, $3, $4, $5)",
                [(task_list_id, t.id, t.title, t.status.value, t.order) for t in new],
            )
            await conn.execute("UPDATE task_lists SET updated_at = $1 WHERE id = $2", now_ms(), task_list_id)
        return new

    async def delete_task(self, task_list_id: str, task_id: str) -> bool:
        """Remove a task; True if it existed."""
        async with transaction(self._pool) as conn:
            gone = await conn.fetchval(
                "DELETE FROM tasks WHERE list_id = $1 AND id = $2 RETURNING 1", task_list_id, task_id
            )
        return gone is not None

    async def increment_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """One more retry, in progress; None at the board's ``max_retries`` or if absent."""
        return await self._change(
            task_list_id,
            task_id,
            "retry_count = retry_count + 1, status = $3",
            (TaskStatus.IN_PROGRESS.value,),
            " AND retry_count < (SELECT max_retries FROM task_lists WHERE id = tasks.list_id)",
        )

    async def force_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """A person's override: retry count 0, in progress, note cleared; None if absent."""
        return await self._change(
            task_list_id, task_id, "retry_count = 0, status = $3, note = ''", (TaskStatus.IN_PROGRESS.value,)
        )

    async def update_task_title(self, task_list_id: str, task_id: str, title: str) -> Task | None:
        """Rename a task; None if it does not exist."""
        check_text(title, "a task title")
        return await self._change(task_list_id, task_id, "title = $3", (title.strip(),))
