"""The memory stores for ``axio-context copy``: vector collections with their documents, graph
entities and relationships, task lists with their tasks, as :mod:`axio_context.copying` rows
(blobs: :func:`.blobs.dump_rows`). Each item loads in one transaction, with its times as stored."""

from __future__ import annotations

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

from ..store.transactions import read_tx, write_tx
from ..store.vec import binary_code

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


def dump_collections(c: Any) -> list[CollectionRow]:
    """Every vector collection with its documents, by name."""
    with read_tx(c):
        out = []
        for cid, name, dimension, embedder, created_at in c.execute(
            "SELECT id, name, dimension, embedder, created_at FROM memory_collections ORDER BY name"
        ).fetchall():
            docs = tuple(
                DocumentRow(i, content, canonical_json(meta), bytes(blob), int(updated))
                for i, content, meta, blob, updated in c.execute(
                    "SELECT d.id, d.content, json(d.metadata), e.embedding, d.updated_at"
                    " FROM memory_documents d JOIN memory_embeddings e ON e.rowid = d.rowid"
                    " WHERE d.collection = ? ORDER BY d.id",
                    (cid,),
                )
            )
            out.append(CollectionRow(name, int(dimension), embedder, int(created_at), docs))
        return out


def load_collection(c: Any, row: CollectionRow) -> None:
    """Create a collection the database lacks, with its documents."""
    with write_tx(c):
        cid = c.execute(
            "INSERT INTO memory_collections (name, dimension, embedder, created_at) VALUES (?, ?, ?, ?)"
            " RETURNING id",
            (row.name, row.dimension, row.embedder, row.created_at),
        ).fetchone()[0]
        for d in row.documents:
            rowid = c.execute(
                "INSERT INTO memory_documents (collection, id, code, metadata, updated_at, content)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING rowid",
                (cid, d.id, binary_code(d.embedding), d.metadata, d.updated_at, d.content),
            ).fetchone()[0]
            c.execute("INSERT INTO memory_embeddings (rowid, embedding) VALUES (?, ?)", (rowid, d.embedding))


def dump_entities(c: Any) -> list[EntityRow]:
    """Every graph entity, by id."""
    rows = c.execute("SELECT id, type, properties FROM graph_entities ORDER BY id").fetchall()
    return [EntityRow(i, t, canonical_json(p)) for i, t, p in rows]


def dump_relationships(c: Any) -> list[RelationshipRow]:
    """Every graph relationship, by id."""
    rows = c.execute("SELECT id, source, target, type, properties FROM graph_relationships ORDER BY id")
    return [RelationshipRow(i, s, t, k, canonical_json(p)) for i, s, t, k, p in rows.fetchall()]


def load_entity(c: Any, row: EntityRow) -> None:
    """Add a graph entity the database lacks."""
    with write_tx(c):
        c.execute(
            "INSERT INTO graph_entities (id, type, properties) VALUES (?, ?, ?)",
            (row.id, row.type, row.properties),
        )


def load_relationship(c: Any, row: RelationshipRow) -> None:
    """Add a graph relationship the database lacks (its entities come first)."""
    with write_tx(c):
        c.execute(
            "INSERT INTO graph_relationships (id, source, target, type, properties) VALUES (?, ?, ?, ?, ?)",
            (row.id, row.source, row.target, row.type, row.properties),
        )


_LIST = "id, conversation_id, agent_id, agent_label, parent_agent_id, max_retries, created_at, updated_at"


def dump_task_lists(c: Any) -> list[TaskListRow]:
    """Every task list with its tasks, by id."""
    with read_tx(c):
        out = []
        for r in c.execute(f"SELECT {_LIST} FROM task_lists ORDER BY id").fetchall():
            tasks = tuple(
                TaskRow(*t)
                for t in c.execute(
                    "SELECT id, title, status, ord, retry_count, note FROM tasks"
                    " WHERE list_id = ? ORDER BY id",
                    (r[0],),
                )
            )
            out.append(TaskListRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], tasks))
        return out


def load_task_list(c: Any, row: TaskListRow) -> None:
    """Create a task list the database lacks, with its tasks."""
    with write_tx(c):
        c.execute(
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
        c.executemany(
            "INSERT INTO tasks (list_id, id, title, status, ord, retry_count, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(row.id, t.id, t.title, t.status, t.ord, t.retry_count, t.note) for t in row.tasks],
        )
