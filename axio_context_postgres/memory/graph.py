"""The graph store on PostgreSQL: :class:`PostgresGraphStore`, ravi's ``GraphStore``.

Entities and relationships are rows (properties in ``jsonb``); a relationship's ends are foreign
keys with ``ON DELETE CASCADE``, so deleting an entity detaches it in the same statement and no
relationship can point at a missing entity, whatever other writers do. ``get_neighbors`` is one
recursive query walking the ``(source, type)`` and ``(target, type)`` indexes outward, both
directions, one hop per step up to ``depth``, keeping each node's least hop count; then one
query reads the entities reached and one the relationships touching the nodes nearer than
``depth``. The graph is never loaded whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

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

from ..connection import Pool
from .common import decode_json, encode_json, transaction

__all__ = ["PostgresGraphStore"]

_ENTITY: Final = "id, type, properties::text"
_RELATIONSHIP: Final = "id, source, target, type, properties::text"
# Ids sort as Python sorts them (by code point), whatever the database's collation.
_BY_ID: Final = 'id COLLATE "C"'

_WALK: Final = """
WITH RECURSIVE walk (node, hops) AS (
    SELECT $1::text, 0
    UNION
    SELECT n.node, w.hops + 1 FROM walk w CROSS JOIN LATERAL (
        SELECT r.target AS node FROM graph_relationships r
        WHERE r.source = w.node AND ($3::text[] IS NULL OR r.type = ANY($3::text[]))
        UNION ALL
        SELECT r.source FROM graph_relationships r
        WHERE r.target = w.node AND ($3::text[] IS NULL OR r.type = ANY($3::text[]))
    ) n
    WHERE w.hops < $2
)
SELECT node, MIN(hops) FROM walk GROUP BY node
"""
# UNION (not UNION ALL) keeps one row per (node, hops): a node is expanded at most once per hop
# count, so the walk is bounded by nodes x depth even on a dense graph.


def _entity(row: Any) -> Entity:
    return Entity(str(row[0]), str(row[1]), decode_json(row[2]))


def _relationship(row: Any) -> Relationship:
    return Relationship(str(row[0]), str(row[1]), str(row[2]), str(row[3]), decode_json(row[4]))


class PostgresGraphStore:
    """:class:`~axio_context.memory.GraphStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it). Not ``CypherCapable``."""

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def _write_entities(self, entities: Sequence[Entity], replace: bool) -> list[str]:
        checked = [check_entity(e) for e in entities]
        if checked:
            conflict = (
                "DO UPDATE SET type = excluded.type, properties = excluded.properties"
                if replace
                else "DO NOTHING"
            )
            async with transaction(self._pool) as conn:
                await conn.executemany(
                    "INSERT INTO graph_entities (id, type, properties) VALUES ($1, $2, $3::jsonb)"
                    f" ON CONFLICT (id) {conflict}",
                    [(e.id, e.type, encode_json(e.properties)) for e in checked],
                )
        return [e.id for e in checked]

    async def _write_relationships(self, relationships: Sequence[Relationship], replace: bool) -> list[str]:
        checked = [check_relationship(r) for r in relationships]
        if not checked:
            return []
        conflict = (
            "DO UPDATE SET source = excluded.source, target = excluded.target, type = excluded.type,"
            " properties = excluded.properties"
            if replace
            else "DO NOTHING"
        )
        async with transaction(self._pool) as conn:
            # Share-locked inside the transaction, so no end can be deleted before we commit
            # (the foreign keys would refuse it anyway; this names the missing end).
            ends = sorted({e for r in checked for e in (r.source_id, r.target_id)})
            present = {
                row[0]
                for row in await conn.fetch(
                    "SELECT id FROM graph_entities WHERE id = ANY($1::text[]) FOR SHARE", ends
                )
            }
            for r in checked:
                for which, end in (("source", r.source_id), ("target", r.target_id)):
                    if end not in present:
                        raise missing_end(r, which, end)
            await conn.executemany(
                "INSERT INTO graph_relationships (id, source, target, type, properties)"
                f" VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT (id) {conflict}",
                [(r.id, r.source_id, r.target_id, r.type, encode_json(r.properties)) for r in checked],
            )
        return [r.id for r in checked]

    async def add_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert the entities whose ids are absent (present ones are kept); returns their ids."""
        return await self._write_entities(entities, False)

    async def upsert_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert or replace the entities; returns their ids."""
        return await self._write_entities(entities, True)

    async def add_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert the relationships whose ids are absent; both ends must exist."""
        return await self._write_relationships(relationships, False)

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert or replace the relationships; both ends must exist."""
        return await self._write_relationships(relationships, True)

    async def get_entity(self, entity_id: str) -> Entity | None:
        """The entity with this id, or None."""
        async with transaction(self._pool, readonly=True) as conn:
            row = await conn.fetchrow(f"SELECT {_ENTITY} FROM graph_entities WHERE id = $1", entity_id)
        return None if row is None else _entity(row)

    async def get_relationship(self, relationship_id: str) -> Relationship | None:
        """The relationship with this id, or None."""
        async with transaction(self._pool, readonly=True) as conn:
            row = await conn.fetchrow(
                f"SELECT {_RELATIONSHIP} FROM graph_relationships WHERE id = $1", relationship_id
            )
        return None if row is None else _relationship(row)

    async def delete_entity(self, entity_id: str) -> bool:
        """Delete the entity and every relationship touching it (DETACH DELETE)."""
        async with transaction(self._pool) as conn:
            gone = await conn.fetchval("DELETE FROM graph_entities WHERE id = $1 RETURNING 1", entity_id)
        return gone is not None

    async def delete_relationship(self, relationship_id: str) -> bool:
        """Delete the relationship; True if it existed."""
        async with transaction(self._pool) as conn:
            gone = await conn.fetchval(
                "DELETE FROM graph_relationships WHERE id = $1 RETURNING 1", relationship_id
            )
        return gone is not None

    async def get_neighbors(
        self, entity_id: str, *, depth: int = 1, relationship_types: Sequence[str] | None = None
    ) -> SubGraph:
        """Breadth-first over undirected edges up to ``depth`` hops, in SQL; empty if absent."""
        check_depth(depth)
        checked = check_types(relationship_types)
        types = None if checked is None else sorted(checked)
        async with transaction(self._pool, readonly=True) as conn:
            if await conn.fetchval("SELECT 1 FROM graph_entities WHERE id = $1", entity_id) is None:
                return SubGraph()
            hops = {str(n): int(h) for n, h in await conn.fetch(_WALK, entity_id, depth, types)}
            inner = [n for n, h in hops.items() if h < depth]
            entities = {
                e.id: e
                for e in map(
                    _entity,
                    await conn.fetch(
                        f"SELECT {_ENTITY} FROM graph_entities WHERE id = ANY($1::text[])", list(hops)
                    ),
                )
            }
            rels = [
                _relationship(r)
                for r in await conn.fetch(
                    f"SELECT {_RELATIONSHIP} FROM graph_relationships"
                    " WHERE (source = ANY($1::text[]) OR target = ANY($1::text[]))"
                    f" AND ($2::text[] IS NULL OR type = ANY($2::text[])) ORDER BY {_BY_ID}",
                    inner,
                    types,
                )
            ]
        order = sorted(entities, key=lambda n: (hops[n], n))
        return SubGraph(tuple(entities[n] for n in order), tuple(rels))

    async def counts(self) -> GraphCounts:
        """How many entities and relationships, by type."""
        async with transaction(self._pool, readonly=True) as conn:
            et = {
                str(t): int(n)
                for t, n in await conn.fetch("SELECT type, COUNT(*) FROM graph_entities GROUP BY type")
            }
            rt = {
                str(t): int(n)
                for t, n in await conn.fetch("SELECT type, COUNT(*) FROM graph_relationships GROUP BY type")
            }
        return GraphCounts(
            sum(et.values()), sum(rt.values()), dict(sorted(et.items())), dict(sorted(rt.items()))
        )

    async def entities(self, *, entity_type: str | None = None, limit: int = 50) -> list[Entity]:
        """The first ``limit`` entities by id (of one type, when given)."""
        async with transaction(self._pool, readonly=True) as conn:
            rows = await conn.fetch(
                f"SELECT {_ENTITY} FROM graph_entities WHERE ($1::text IS NULL OR type = $1)"
                f" ORDER BY {_BY_ID} LIMIT $2",
                entity_type,
                max(limit, 0),
            )
        return [_entity(r) for r in rows]
