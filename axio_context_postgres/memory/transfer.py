"""The memory stores for ``axio-context copy`` on PostgreSQL: vector collections with their
documents, graph entities and relationships, task lists with their tasks, as
:mod:`axio_context.copying` rows (blobs: :meth:`.blobs.PostgresBlobStore.dump_rows`). Loads run
in the caller's transaction (one per item), with times as stored."""

from __future__ import annotations

from array import array
from typing import Any

from axio_context.copying import (
    CollectionRow,
    DocumentRow,
    EntityRow,
    RelationshipRow,
    TaskListRow,
    TaskRow,
    canonical_json,
)

from .vectors import ensure_collection

__all__ = [
    "dump_collections",
    "dump_entities",
    "dump_relationships",
    "dump_task_lists",
    "load_collection",
    "load_entity",
    "load_relationship",
    "load_task_list",
]


def _float32(values: Any) -> bytes:
    return array("f", values).tobytes()


async def dump_collections(conn: Any) -> list[CollectionRow]:
    """Every vector collection with its documents, by name."""
    collections = await conn.fetch(
        "SELECT id, name, dimension, embedder, created_at FROM memory_collections ORDER BY name"
    )
    if not collections:
        return []
    out = []
    for cid, name, dimension, embedder, created_at in collections:
        rows = await conn.fetch(
            "SELECT id, content, metadata::text, embedding::real[], updated_at FROM memory_documents"
            ' WHERE collection = $1 ORDER BY id COLLATE "C"',
            cid,
        )
        docs = tuple(DocumentRow(r[0], r[1], canonical_json(r[2]), _float32(r[3]), int(r[4])) for r in rows)
        out.append(CollectionRow(name, int(dimension), embedder, int(created_at), docs))
    return out


async def load_collection(conn: Any, row: CollectionRow) -> None:
    """Create a collection the database lacks (and its index), with its documents."""
    cid = await ensure_collection(conn, row.name, row.dimension, row.embedder, row.created_at)
    await conn.executemany(
        "INSERT INTO memory_documents (collection, id, content, metadata, embedding, updated_at)"
        " VALUES ($1, $2, $3, $4::jsonb, $5::real[]::vector, $6)",
        [
            (cid, d.id, d.content, d.metadata, list(array("f", d.embedding)), d.updated_at)
            for d in row.documents
        ],
    )


async def dump_entities(conn: Any) -> list[EntityRow]:
    """Every graph entity, by id."""
    rows = await conn.fetch('SELECT id, type, properties::text FROM graph_entities ORDER BY id COLLATE "C"')
    return [EntityRow(r[0], r[1], canonical_json(r[2])) for r in rows]


async def dump_relationships(conn: Any) -> list[RelationshipRow]:
    """Every graph relationship, by id."""
    rows = await conn.fetch(
        'SELECT id, source, target, type, properties::text FROM graph_relationships ORDER BY id COLLATE "C"'
    )
    return [RelationshipRow(r[0], r[1], r[2], r[3], canonical_json(r[4])) for r in rows]


async def load_entity(conn: Any, row: EntityRow) -> None:
    """Add a graph entity the database lacks."""
    await conn.execute(
        "INSERT INTO graph_entities (id, type, properties) VALUES ($1, $2, $3::jsonb)",
        row.id,
        row.type,
        row.properties,
    )


async def load_relationship(conn: Any, row: RelationshipRow) -> None:
    """Add a graph relationship the database lacks (its entities come first)."""
    await conn.execute(
        "INSERT INTO graph_relationships (id, source, target, type, properties)"
        " VALUES ($1, $2, $3, $4, $5::jsonb)",
        row.id,
        row.source,
        row.target,
        row.type,
        row.properties,
    )


_LIST = "id, conversation_id, agent_id, agent_label, parent_agent_id, max_retries, created_at, updated_at"


async def dump_task_lists(conn: Any) -> list[TaskListRow]:
    """Every task list with its tasks, by id."""
    out = []
    for r in await conn.fetch(f'SELECT {_LIST} FROM task_lists ORDER BY id COLLATE "C"'):
        tasks = tuple(
            TaskRow(t[0], t[1], t[2], int(t[3]), int(t[4]), t[5])
            for t in await conn.fetch(
                "SELECT id, title, status, ord, retry_count, note FROM tasks WHERE list_id = $1"
                ' ORDER BY id COLLATE "C"',
                r[0],
            )
        )
        out.append(TaskListRow(r[0], r[1], r[2], r[3], r[4], int(r[5]), int(r[6]), int(r[7]), tasks=tasks))
    return out


async def load_task_list(conn: Any, row: TaskListRow) -> None:
    """Create a task list the database lacks, with its tasks."""
    await conn.execute(
        f"INSERT INTO task_lists ({_LIST}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        row.id,
        row.conversation_id,
        row.agent_id,
        row.agent_label,
        row.parent_agent_id,
        row.max_retries,
        row.created_at,
        row.updated_at,
    )
    await conn.executemany(
        "INSERT INTO tasks (list_id, id, title, status, ord, retry_count, note)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7)",
        [(row.id, t.id, t.title, t.status, t.ord, t.retry_count, t.note) for t in row.tasks],
    )
