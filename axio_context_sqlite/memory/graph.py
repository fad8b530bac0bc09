"""The graph store in the SQLite file: :class:`SQLiteGraphStore`, ravi's ``GraphStore``.

Entities and relationships are rows; ``get_neighbors`` is one recursive query that walks the
relationships' ``(source, type)`` and ``(target, type)`` indexes outward from the entity, one hop
per step up to ``depth``, in both directions, keeping each node's least hop count; then one
query reads the entities reached and one the relationships touching the nodes nearer than
``depth``. The graph is never loaded whole. Every write is one transaction; a relationship to a
missing entity fails the whole batch before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import aiosqlite
import msgspec

from axio_context.memory.graph import (
    Entity,
    GraphCounts,
    Relationship,
    SubGraph,
    check_depth,
    check_entity,
    check_relationship,
    check_types,
    missing_end,
)

from ..store.calls import run
from ..store.transactions import read_tx, write_tx

__all__ = ["SQLiteGraphStore"]

_JSON: Final = msgspec.json.Encoder()
_PROPS: Final = msgspec.json.Decoder(dict[str, Any])


def _json(value: Any) -> str:
    return _JSON.encode(value).decode()


def _entity(row: Any) -> Entity:
    return Entity(str(row[0]), str(row[1]), _PROPS.decode(row[2]))


def _relationship(row: Any) -> Relationship:
    return Relationship(str(row[0]), str(row[1]), str(row[2]), str(row[3]), _PROPS.decode(row[4]))


def _write_entities(c: Any, entities: list[Entity], replace: bool) -> None:
    conflict = (
        "DO UPDATE SET type = excluded.type, properties = excluded.properties" if replace else "DO NOTHING"
    )
    with write_tx(c):
        c.executemany(
            f"INSERT INTO graph_entities (id, type, properties) VALUES (?, ?, ?) ON CONFLICT (id) {conflict}",
            [(e.id, e.type, _json(e.properties)) for e in entities],
        )


def _write_relationships(c: Any, rels: list[Relationship], replace: bool) -> None:
    conflict = (
        "DO UPDATE SET source = excluded.source, target = excluded.target, type = excluded.type,"
        " properties = excluded.properties"
        if replace
        else "DO NOTHING"
    )
    with write_tx(c):
        for r in rels:  # checked inside the transaction, so no entity can vanish meanwhile
            for which, end in (("source", r.source_id), ("target", r.target_id)):
                if c.execute("SELECT 1 FROM graph_entities WHERE id = ?", (end,)).fetchone() is None:
                    raise missing_end(r, which, end)
        c.executemany(
            "INSERT INTO graph_relationships (id, source, target, type, properties) VALUES (?, ?, ?, ?, ?)"
            f" ON CONFLICT (id) {conflict}",
            [(r.id, r.source_id, r.target_id, r.type, _json(r.properties)) for r in rels],
        )


def _get_entity(c: Any, entity_id: str) -> Entity | None:
    row = c.execute("SELECT id, type, properties FROM graph_entities WHERE id = ?", (entity_id,)).fetchone()
    return None if row is None else _entity(row)


def _get_relationship(c: Any, rel_id: str) -> Relationship | None:
    row = c.execute(
        "SELECT id, source, target, type, properties FROM graph_relationships WHERE id = ?", (rel_id,)
    ).fetchone()
    return None if row is None else _relationship(row)


def _delete_entity(c: Any, entity_id: str) -> bool:
    with write_tx(c):
        if c.execute("DELETE FROM graph_entities WHERE id = ? RETURNING id", (entity_id,)).fetchone() is None:
            return False
        c.execute("DELETE FROM graph_relationships WHERE source = ? OR target = ?", (entity_id, entity_id))
        return True


def _delete_relationship(c: Any, rel_id: str) -> bool:
    with write_tx(c):
        return (
            c.execute("DELETE FROM graph_relationships WHERE id = ? RETURNING id", (rel_id,)).fetchone()
            is not None
        )


def _neighbors(c: Any, entity_id: str, depth: int, types: list[str] | None) -> SubGraph:
    type_sql = "" if types is None else " AND r.type IN (SELECT value FROM json_each(:types))"
    params: dict[str, Any] = {"start": entity_id, "depth": depth, "types": _json(types or [])}
    with read_tx(c):
        if c.execute("SELECT 1 FROM graph_entities WHERE id = ?", (entity_id,)).fetchone() is None:
            return SubGraph()
        # UNION (not UNION ALL) keeps one row per (node, hops): a node is expanded at most once
        # per hop count, so the walk is bounded by nodes x depth even on a dense graph.
        reached = c.execute(
            "WITH RECURSIVE walk (node, hops) AS ("
            " SELECT :start, 0"
            " UNION"
            f" SELECT r.target, w.hops + 1 FROM walk AS w JOIN graph_relationships AS r ON r.source = w.node"
            f" WHERE w.hops < :depth{type_sql}"
            " UNION"
            f" SELECT r.source, w.hops + 1 FROM walk AS w JOIN graph_relationships AS r ON r.target = w.node"
            f" WHERE w.hops < :depth{type_sql}"
            ") SELECT node, MIN(hops) FROM walk GROUP BY node",
            params,
        ).fetchall()
        hops = {str(node): int(h) for node, h in reached}
        inner = [n for n, h in hops.items() if h < depth]
        entities = {
            e.id: e
            for e in map(
                _entity,
                c.execute(
                    "SELECT id, type, properties FROM graph_entities"
                    " WHERE id IN (SELECT value FROM json_each(?))",
                    (_json(list(hops)),),
                ),
            )
        }
        rels = [
            _relationship(r)
            for r in c.execute(
                "SELECT id, source, target, type, properties FROM graph_relationships AS r"
                " WHERE (r.source IN (SELECT value FROM json_each(:inner))"
                f" OR r.target IN (SELECT value FROM json_each(:inner))){type_sql} ORDER BY r.id",
                {"inner": _json(inner), "types": params["types"]},
            )
        ]
    order = sorted(entities, key=lambda n: (hops[n], n))
    return SubGraph(tuple(entities[n] for n in order), tuple(rels))


def _counts(c: Any) -> GraphCounts:
    with read_tx(c):
        et = {
            str(t): int(n)
            for t, n in c.execute("SELECT type, COUNT(*) FROM graph_entities GROUP BY type ORDER BY type")
        }
        rt = {
            str(t): int(n)
            for t, n in c.execute(
                "SELECT type, COUNT(*) FROM graph_relationships GROUP BY type ORDER BY type"
            )
        }
    return GraphCounts(sum(et.values()), sum(rt.values()), et, rt)


def _entities(c: Any, entity_type: str | None, limit: int) -> list[Entity]:
    if entity_type is None:
        rows = c.execute("SELECT id, type, properties FROM graph_entities ORDER BY id LIMIT ?", (limit,))
    else:
        rows = c.execute(
            "SELECT id, type, properties FROM graph_entities WHERE type = ? ORDER BY id LIMIT ?",
            (entity_type, limit),
        )
    return [_entity(r) for r in rows]


class SQLiteGraphStore:
    """:class:`~axio_context.memory.GraphStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it). Not ``CypherCapable``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def add_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert the entities whose ids are absent (present ones are kept); returns their ids."""
        checked = [check_entity(e) for e in entities]
        if checked:
            await run(self._conn, _write_entities, checked, False)
        return [e.id for e in checked]

    async def upsert_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert or replace the entities; returns their ids."""
        checked = [check_entity(e) for e in entities]
        if checked:
            await run(self._conn, _write_entities, checked, True)
        return [e.id for e in checked]

    async def add_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert the relationships whose ids are absent; both ends must exist."""
        checked = [check_relationship(r) for r in relationships]
        if checked:
            await run(self._conn, _write_relationships, checked, False)
        return [r.id for r in checked]

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert or replace the relationships; both ends must exist."""
        checked = [check_relationship(r) for r in relationships]
        if checked:
            await run(self._conn, _write_relationships, checked, True)
        return [r.id for r in checked]

    async def get_entity(self, entity_id: str) -> Entity | None:
        """The entity with this id, or None."""
        return await run(self._conn, _get_entity, entity_id)

    async def get_relationship(self, relationship_id: str) -> Relationship | None:
        """The relationship with this id, or None."""
        return await run(self._conn, _get_relationship, relationship_id)

    async def delete_entity(self, entity_id: str) -> bool:
        """Delete the entity and every relationship touching it (DETACH DELETE)."""
        return await run(self._conn, _delete_entity, entity_id)

    async def delete_relationship(self, relationship_id: str) -> bool:
        """Delete the relationship; True if it existed."""
        return await run(self._conn, _delete_relationship, relationship_id)

    async def get_neighbors(
        self, entity_id: str, *, depth: int = 1, relationship_types: Sequence[str] | None = None
    ) -> SubGraph:
        """Breadth-first over undirected edges up to ``depth`` hops, in SQL; empty if absent."""
        check_depth(depth)
        types = check_types(relationship_types)
        return await run(self._conn, _neighbors, entity_id, depth, None if types is None else sorted(types))

    async def counts(self) -> GraphCounts:
        """How many entities and relationships, by type."""
        return await run(self._conn, _counts)

    async def entities(self, *, entity_type: str | None = None, limit: int = 50) -> list[Entity]:
        """The first ``limit`` entities by id (of one type, when given)."""
        return await run(self._conn, _entities, entity_type, max(limit, 0))
