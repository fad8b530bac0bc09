"""The memory stores for ``axio-context copy`` on any SQL backend, written once: graph entities
and relationships, task lists with their tasks, as :mod:`axio_context.copying` rows (vector
collections go through each backend's vector statements, which know how it keeps embeddings;
blobs through the blob store). Dumps run in the caller's read snapshot, each load in the
caller's write transaction, with times as stored.

JSON comes out canonical (keys sorted, as :func:`~axio_context.copying.canonical_json` writes
it), so the same value reads the same from either backend, and goes back in through the
dialect's :meth:`~axio_context.sql.Dialect.json_arg`, so its numbers keep their types.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from axio_context.copying import EntityRow, RelationshipRow, TaskListRow, TaskRow, canonical_json
from axio_context.expiry import now_ms
from axio_context.sql import Dialect, Execute, ExecuteMany, Plan, Rows
from axio_context.sql.expiry import live

__all__ = [
    "dump_entities",
    "dump_relationships",
    "dump_task_lists",
    "load_entity",
    "load_relationship",
    "load_task_list",
    "stored_json",
]

_ANY: Final = msgspec.json.Decoder()
_LIST: Final = (
    "id, conversation_id, agent_id, agent_label, parent_agent_id, max_retries, created_at, updated_at"
)


def stored_json(d: Dialect, text: str) -> str:
    """A copy row's JSON text as ``d`` stores it."""
    return d.json_arg(_ANY.decode(text))


def dump_entities(d: Dialect) -> Plan[list[EntityRow]]:
    """Every graph entity, by id."""
    rows = yield Rows(
        f"SELECT id, type, {d.json_text('properties')} FROM graph_entities ORDER BY {d.by_code_point('id')}"
    )
    return [EntityRow(str(i), str(t), canonical_json(p)) for i, t, p in rows]


def dump_relationships(d: Dialect) -> Plan[list[RelationshipRow]]:
    """Every graph relationship, by id."""
    rows = yield Rows(
        f"SELECT id, source, target, type, {d.json_text('properties')} FROM graph_relationships"
        f" ORDER BY {d.by_code_point('id')}"
    )
    return [RelationshipRow(str(i), str(s), str(t), str(k), canonical_json(p)) for i, s, t, k, p in rows]


def load_entity(d: Dialect, row: EntityRow) -> Plan[None]:
    """Add a graph entity the database lacks."""
    yield Execute(
        f"INSERT INTO graph_entities (id, type, properties) VALUES (?, ?, {d.json_param()})",
        (row.id, row.type, stored_json(d, row.properties)),
    )


def load_relationship(d: Dialect, row: RelationshipRow) -> Plan[None]:
    """Add a graph relationship the database lacks (its entities come first)."""
    yield Execute(
        "INSERT INTO graph_relationships (id, source, target, type, properties)"
        f" VALUES (?, ?, ?, ?, {d.json_param()})",
        (row.id, row.source, row.target, row.type, stored_json(d, row.properties)),
    )


def dump_task_lists(d: Dialect) -> Plan[list[TaskListRow]]:
    """Every live task list with its tasks, by id (two queries, however many lists; an expired
    one is left out, so a copy does not bring it back)."""
    lists = yield Rows(
        f"SELECT {_LIST} FROM task_lists WHERE {live()} ORDER BY {d.by_code_point('id')}", (now_ms(),)
    )
    tasks: dict[str, list[TaskRow]] = {}
    for t in (
        yield Rows(
            "SELECT list_id, id, title, status, ord, retry_count, note FROM tasks"
            f" ORDER BY list_id, {d.by_code_point('id')}"
        )
    ):
        tasks.setdefault(str(t[0]), []).append(
            TaskRow(str(t[1]), str(t[2]), str(t[3]), int(t[4]), int(t[5]), str(t[6]))
        )
    return [_task_list(r, tasks.get(str(r[0]), [])) for r in lists]


def _task_list(r: Any, tasks: list[TaskRow]) -> TaskListRow:
    parent = None if r[4] is None else str(r[4])
    return TaskListRow(
        str(r[0]), str(r[1]), str(r[2]), str(r[3]), parent, int(r[5]), int(r[6]), int(r[7]), tuple(tasks)
    )


def load_task_list(d: Dialect, row: TaskListRow) -> Plan[None]:
    """Create a task list the database lacks, with its tasks."""
    yield Execute(
        f"INSERT INTO task_lists ({_LIST}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.id,
            row.conversation_id,
            row.agent_id,
            row.agent_label,
            row.parent_agent_id,
            row.max_retries,
            row.created_at,
            row.updated_at,
        ),
    )
    yield ExecuteMany(
        "INSERT INTO tasks (list_id, id, title, status, ord, retry_count, note) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (row.id, t.id, d.sealed(t.title), t.status, t.ord, t.retry_count, d.sealed(t.note))
            for t in row.tasks
        ],
    )
