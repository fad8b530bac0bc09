"""The task store on any SQL backend, written once: :class:`SQLTaskStore` over a
:class:`~axio_context.sql.Runner` (SQLite's ``SQLiteTaskStore`` and PostgreSQL's
``PostgresTaskStore`` only choose the runner).

A board is a ``task_lists`` row and each task a ``tasks`` row. Every change is one transaction,
and the ones that depend on what is stored are a single conditional statement
(``increment_retry`` is ``UPDATE ... WHERE retry_count < max_retries``), so writers sharing the
database never lose each other's updates. Replacing a board first takes a lock on its
``(conversation, agent)`` key (the dialect's key lock; SQLite's write lock already is one), so
two agents recreating it at once leave one. Boards are read with their tasks in two queries,
however many boards.

A task whose status this version does not know (a newer version wrote it) is kept as it is. A
listing leaves its board out and says so with an :class:`UnreadableTaskWarning` naming the row;
asking for that board by id is a :class:`~.errors.TaskStatusError` naming it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from axio_context.expiry import DEFAULT, NO_TTL, TTL, TTLConfig, now_ms, resolve_ttl
from axio_context.sql import Dialect, Execute, ExecuteMany, Plan, Row, Rows, Runner, Value
from axio_context.sql.expiry import (
    SWEEP_BATCH,
    alive,
    count_due,
    due_keys,
    in_batches,
    live,
    refresh,
    set_ttl,
)
from axio_context.transcript import format_time

from .errors import TaskStatusError
from .tasks import (
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

__all__ = ["SQLTaskStore", "UnreadableTaskWarning"]

_TASK: Final = "id, title, status, ord, retry_count, note"
_LIST: Final = "id, conversation_id, max_retries, agent_id, agent_label, parent_agent_id, created_at"
#: The largest row count a query is asked for (SQL's LIMIT is a signed 64-bit number).
_MOST: Final = 2**63 - 1


class UnreadableTaskWarning(UserWarning):
    """A listing left out a board holding a task this version cannot read (an unknown status)."""


class _Read(NamedTuple):
    boards: list[TaskList]
    unreadable: list[str]  # one line per board left out, naming the row


def _now() -> int:
    return time.time_ns() // 1_000_000


def _task(row: Any) -> Task:
    return Task(str(row[0]), str(row[1]), parse_status(str(row[2])), int(row[3]), int(row[4]), str(row[5]))


def _boards(
    d: Dialect,
    where: str,
    args: Sequence[Any],
    tail: str = "",
    more: Sequence[Any] = (),
    at: int | None = None,
) -> Plan[_Read]:
    """The boards a condition on ``task_lists`` picks that are live at ``at`` (default now),
    with their tasks (``tail``: the ORDER BY and LIMIT, ``more`` their arguments)."""
    lists = yield Rows(
        f"SELECT {_LIST} FROM task_lists WHERE {where} AND {live()} {tail}",
        (*args, now_ms() if at is None else at, *more),
    )
    if not lists:
        return _Read([], [])
    rows = yield Rows(
        f"SELECT list_id, {_TASK} FROM tasks WHERE {d.any_of('list_id')} ORDER BY list_id, ord",
        (d.list_arg(str(r[0]) for r in lists),),
    )
    tasks: dict[str, list[Task]] = {}
    bad: dict[str, str] = {}
    for r in rows:
        list_id = str(r[0])
        try:
            tasks.setdefault(list_id, []).append(_task(r[1:]))
        except TaskStatusError:
            bad.setdefault(
                list_id, f"board {list_id}: task {r[1]} has status {r[3]!r}, unknown to this version"
            )
    boards = [
        TaskList(
            id=str(r[0]),
            conversation_id=str(r[1]),
            max_retries=int(r[2]),
            agent_id=str(r[3]),
            agent_label=str(r[4]),
            parent_agent_id=None if r[5] is None else str(r[5]),
            created_at=format_time(int(r[6])),
            tasks=tasks.get(str(r[0]), []),
        )
        for r in lists
        if str(r[0]) not in bad
    ]
    return _Read(boards, list(bad.values()))


def _create(
    d: Dialect,
    conversation_id: str,
    agent_id: str,
    agent_label: str,
    parent_agent_id: str | None,
    max_retries: int,
    titles: list[str],
    ttl_ms: int | None,
) -> Plan[_Read]:
    now = _now()
    list_id = new_id()
    if d.key_lock is not None:
        yield Execute(d.key_lock, (f"task_lists\x1f{conversation_id}\x1f{agent_id}",))
    old = yield Row(
        f"SELECT id, created_at, {live()} FROM task_lists"
        f" WHERE conversation_id = ? AND agent_id = ?{d.lock_rows}",
        (now, conversation_id, agent_id),
    )
    # The board stays anchored to its first turn (an expired one's is over).
    created = now if old is None or not old[2] else int(old[1])
    if old is not None:
        yield Execute("DELETE FROM tasks WHERE list_id = ?", (old[0],))
        yield Execute("DELETE FROM task_lists WHERE id = ?", (old[0],))
    yield Execute(
        "INSERT INTO task_lists (id, conversation_id, agent_id, agent_label, parent_agent_id,"
        " max_retries, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (list_id, conversation_id, agent_id, agent_label, parent_agent_id, max_retries, created, now),
    )
    yield ExecuteMany(
        "INSERT INTO tasks (list_id, id, title, status, ord) VALUES (?, ?, ?, ?, ?)",
        [(list_id, new_id(), d.sealed(t), TaskStatus.PLANNED.value, i) for i, t in enumerate(titles)],
    )
    yield from set_ttl(d, "task_lists", "id", list_id, ttl_ms, now)
    return (yield from _boards(d, "id = ?", (list_id,), at=now))


def _by_conversation(d: Dialect, conversation_id: str) -> Plan[_Read]:
    return (
        yield from _boards(
            d, "conversation_id = ?", (conversation_id,), f"ORDER BY {d.by_code_point('agent_id')}"
        )
    )


def _newest(d: Dialect, limit: int | None) -> Plan[_Read]:
    order = "ORDER BY created_at DESC, id DESC"
    if limit is None:
        return (yield from _boards(d, "1 = 1", (), order))
    return (yield from _boards(d, "1 = 1", (), f"{order} LIMIT ?", (limit,)))


def _settle(d: Dialect, conversation_id: str, status: str) -> Plan[_Read]:
    changed = yield Rows(
        "UPDATE tasks SET status = ? WHERE status = ? AND list_id IN"
        f" (SELECT id FROM task_lists WHERE conversation_id = ? AND {live()}) RETURNING list_id",
        (status, TaskStatus.IN_PROGRESS.value, conversation_id, now_ms()),
    )
    ids = d.list_arg(sorted({str(r[0]) for r in changed}))
    yield Execute(f"UPDATE task_lists SET updated_at = ? WHERE {d.any_of('id')}", (_now(), ids))
    return (yield from _boards(d, d.any_of("id"), (ids,), f"ORDER BY {d.by_code_point('agent_id')}"))


def _change(
    d: Dialect, list_id: str, task_id: str, assignments: str, params: tuple[Any, ...], guard: str = ""
) -> Plan[Task | None]:
    """One conditional UPDATE of a task (``params`` fill ``assignments``) on a live board; the
    task as it now is."""
    if not (yield from _alive(d, list_id)):
        return None
    row = yield Row(
        f"UPDATE tasks SET {assignments} WHERE list_id = ? AND id = ?{guard} RETURNING {_TASK}",
        (*params, list_id, task_id),
    )
    if row is None:
        return None
    yield Execute("UPDATE task_lists SET updated_at = ? WHERE id = ?", (_now(), list_id))
    return _task(row)


def _add(d: Dialect, list_id: str, titles: list[str]) -> Plan[list[Task]]:
    # Locking the board row (where rows lock) orders concurrent appenders: no order collides.
    found = yield Value(f"SELECT {live()} FROM task_lists WHERE id = ?{d.lock_rows}", (now_ms(), list_id))
    if not found:
        return []
    start = int((yield Value("SELECT COALESCE(MAX(ord), -1) + 1 FROM tasks WHERE list_id = ?", (list_id,))))
    new = [Task(new_id(), t, TaskStatus.PLANNED, start + i) for i, t in enumerate(titles)]
    yield ExecuteMany(
        "INSERT INTO tasks (list_id, id, title, status, ord) VALUES (?, ?, ?, ?, ?)",
        [(list_id, t.id, d.sealed(t.title), t.status.value, t.order) for t in new],
    )
    yield Execute("UPDATE task_lists SET updated_at = ? WHERE id = ?", (_now(), list_id))
    return new


def _alive(d: Dialect, list_id: str) -> Plan[bool]:
    return (yield from alive(d, "task_lists", "id", list_id, now_ms()))


def _delete(d: Dialect, list_id: str, task_id: str) -> Plan[bool]:
    if not (yield from _alive(d, list_id)):
        return False
    gone = yield Value("DELETE FROM tasks WHERE list_id = ? AND id = ? RETURNING 1", (list_id, task_id))
    return gone is not None


def _sweep(d: Dialect, now: int, limit: int) -> Plan[int]:
    """Delete at most ``limit`` expired boards with their tasks; how many boards went."""
    rows = yield Rows(due_keys("task_lists", "id"), (now, limit))
    if rows:
        ids = d.list_arg([str(r[0]) for r in rows])
        yield Execute(f"DELETE FROM tasks WHERE {d.any_of('list_id')}", (ids,))
        yield Execute(f"DELETE FROM task_lists WHERE {d.any_of('id')}", (ids,))
    return len(rows)


def _listed(read: _Read) -> list[TaskList]:
    for line in read.unreadable:
        warnings.warn(f"{line} (board left out)", UnreadableTaskWarning, stacklevel=3)
    return read.boards


class SQLTaskStore:
    """:class:`~axio_context.memory.TaskStore` in a SQL database (the backend gives the runner),
    safe across processes and, on a server, hosts; ``ttl`` is its boards' expiry
    (:mod:`axio_context.expiry`: a default TTL, refresh on read)."""

    def __init__(self, runner: Runner, *, ttl: TTLConfig = NO_TTL) -> None:
        if not isinstance(ttl, TTLConfig):
            raise TypeError(f"ttl is a TTLConfig, got {type(ttl).__name__}")
        self._runner = runner
        self._ttl = ttl

    @property
    def ttl(self) -> TTLConfig:
        """The store's expiry: its default TTL and whether reads refresh."""
        return self._ttl

    async def _seen(self, boards: list[TaskList], refresh_ttl: bool | None = None) -> list[TaskList]:
        if boards and self._ttl.refresh(refresh_ttl):
            await self._runner.write(refresh, "task_lists", "id", [b.id for b in boards], now_ms())
        return boards

    async def count_expired(self) -> int:
        """How many boards have expired and wait for a sweep."""
        return await self._runner.read(count_due, "task_lists", now_ms())

    async def sweep_expired(self, *, batch: int = SWEEP_BATCH) -> int:
        """Delete the expired boards with their tasks; how many boards went
        (``batch`` at most per transaction)."""
        return await in_batches(self._runner, _sweep, now_ms(), batch=batch)

    async def create_task_list(
        self,
        conversation_id: str,
        task_titles: Sequence[str],
        *,
        agent_id: str = "",
        agent_label: str = "",
        parent_agent_id: str | None = None,
        max_retries: int = 3,
        ttl: TTL = DEFAULT,
    ) -> TaskList:
        """A new board for the key (replacing its old one), one planned task per non-blank title;
        ``ttl`` seconds to live (None: until deleted; DEFAULT: the store's)."""
        ttl_ms = resolve_ttl(ttl, self._ttl)
        check_text(conversation_id, "conversation_id")
        check_text(agent_id, "agent_id")
        check_text(agent_label, "agent_label")
        check_max_retries(max_retries)
        titles = titles_of(task_titles)
        read = await self._runner.write(
            _create, conversation_id, agent_id, agent_label, parent_agent_id, max_retries, titles, ttl_ms
        )
        return read.boards[0]

    async def get_task_list(self, task_list_id: str) -> TaskList | None:
        """The board with this id, or None (TaskStatusError naming the row if it cannot be read)."""
        read = await self._runner.read(_boards, "id = ?", (task_list_id,))
        if read.unreadable:
            raise TaskStatusError(read.unreadable[0])
        seen = await self._seen(read.boards[:1])
        return seen[0] if seen else None

    async def get_by_conversation(self, conversation_id: str) -> TaskList | None:
        """The conversation's root board (agent_id ''), else its first board, else None."""
        boards = _listed(await self._runner.read(_by_conversation, conversation_id))
        seen = await self._seen(boards[:1])
        return seen[0] if seen else None

    async def get_boards_by_conversation(self, conversation_id: str) -> list[TaskList]:
        """Every board of the conversation, by agent id."""
        return await self._seen(_listed(await self._runner.read(_by_conversation, conversation_id)))

    async def list_task_lists(self, *, limit: int | None = None) -> list[TaskList]:
        """Every board, newest first."""
        bound = None if limit is None else min(max(limit, 0), _MOST)
        return await self._seen(_listed(await self._runner.read(_newest, bound)))

    async def settle_conversation(
        self, conversation_id: str, status: TaskStatus = TaskStatus.SUCCEEDED
    ) -> list[TaskList]:
        """Move the conversation's in-progress tasks to ``status``; returns the boards changed."""
        final = check_final(status)
        return _listed(await self._runner.write(_settle, conversation_id, final.value))

    async def update_status(
        self, task_list_id: str, task_id: str, status: TaskStatus | str, note: str = ""
    ) -> Task | None:
        """Set a task's status (and note, when given); None if the task does not exist."""
        parsed = parse_status(status)
        check_text(note, "note")
        return await self._runner.write(
            _change,
            task_list_id,
            task_id,
            "status = ?, note = CASE WHEN CAST(? AS TEXT) = '' THEN note ELSE ? END",
            (parsed.value, note, self._runner.dialect.sealed(note)),  # (the first: is one given)
        )

    async def add_tasks(self, task_list_id: str, titles: Sequence[str]) -> list[Task]:
        """Append planned tasks to a board; [] if it does not exist."""
        return await self._runner.write(_add, task_list_id, titles_of(titles))

    async def delete_task(self, task_list_id: str, task_id: str) -> bool:
        """Remove a task; True if it existed."""
        return await self._runner.write(_delete, task_list_id, task_id)

    async def increment_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """One more retry, in progress; None at the board's ``max_retries`` or if absent."""
        return await self._runner.write(
            _change,
            task_list_id,
            task_id,
            "retry_count = retry_count + 1, status = ?",
            (TaskStatus.IN_PROGRESS.value,),
            " AND retry_count < (SELECT max_retries FROM task_lists WHERE id = tasks.list_id)",
        )

    async def force_retry(self, task_list_id: str, task_id: str) -> Task | None:
        """A person's override: retry count 0, in progress, note cleared; None if absent."""
        return await self._runner.write(
            _change,
            task_list_id,
            task_id,
            "retry_count = 0, status = ?, note = ''",
            (TaskStatus.IN_PROGRESS.value,),
        )

    async def update_task_title(self, task_list_id: str, task_id: str, title: str) -> Task | None:
        """Rename a task; None if it does not exist."""
        check_text(title, "a task title")
        sealed = self._runner.dialect.sealed(title.strip())
        return await self._runner.write(_change, task_list_id, task_id, "title = ?", (sealed,))
