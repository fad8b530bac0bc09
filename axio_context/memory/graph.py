"""The graph store (ravi's ``GraphStore`` / ``InMemoryGraphStore``): facts linked to each other.

Entities ``(id, type, properties)`` and relationships ``(id, source_id, target_id, type,
properties)``. ``add_*`` inserts what is absent and keeps what is present; ``upsert_*`` inserts
or replaces. A relationship whose source or target entity does not exist is an
:class:`~.errors.EntityNotFoundError`, and none of the batch is written. ``delete_entity`` is
Cypher's ``DETACH DELETE``: every relationship touching the entity goes with it.

``get_neighbors(entity_id, depth=1, relationship_types=None)`` walks breadth-first over
undirected edges (ravi's AGE pattern ``-[r]-``) up to ``depth`` hops, following only the given
relationship types when asked, and returns a :class:`SubGraph`: the start entity, every entity
reached, and every relationship followed. Entities come nearest first (then by id),
relationships by id. No store here is :class:`CypherCapable`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec

from .errors import EntityNotFoundError, InvalidInputError
from .metadata import check_metadata

__all__ = [
    "CypherCapable",
    "Entity",
    "GraphCounts",
    "GraphStore",
    "InMemoryGraphStore",
    "Relationship",
    "SubGraph",
    "check_depth",
    "check_entity",
    "check_relationship",
]


class Entity(msgspec.Struct, frozen=True):
    """A node: an id, a type (a label, e.g. ``Person``) and free JSON properties."""

    id: str
    type: str
    properties: dict[str, Any] = msgspec.field(default_factory=dict)


class Relationship(msgspec.Struct, frozen=True):
    """An edge from ``source_id`` to ``target_id``, typed, with free JSON properties."""

    id: str
    source_id: str
    target_id: str
    type: str
    properties: dict[str, Any] = msgspec.field(default_factory=dict)


class SubGraph(msgspec.Struct, frozen=True):
    """What :meth:`GraphStore.get_neighbors` found: entities nearest first, relationships by id."""

    entities: tuple[Entity, ...] = ()
    relationships: tuple[Relationship, ...] = ()


class GraphCounts(msgspec.Struct, frozen=True):
    """How many entities and relationships a graph holds, each by type."""

    entities: int
    relationships: int
    entity_types: dict[str, int]
    relationship_types: dict[str, int]


@runtime_checkable
class CypherCapable(Protocol):
    """A graph store that runs openCypher queries (ravi's AGE store); none here is one."""

    async def query_cypher(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of an openCypher query."""
        ...


@runtime_checkable
class GraphStore(Protocol):
    """Entities and relationships, walked breadth-first (ravi's ``GraphStore``)."""

    async def add_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert the entities whose ids are absent (present ones are kept); returns their ids."""
        ...

    async def upsert_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert or replace the entities; returns their ids."""
        ...

    async def add_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert the relationships whose ids are absent; both ends must exist."""
        ...

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert or replace the relationships; both ends must exist."""
        ...

    async def get_entity(self, entity_id: str) -> Entity | None:
        """The entity with this id, or None."""
        ...

    async def get_relationship(self, relationship_id: str) -> Relationship | None:
        """The relationship with this id, or None."""
        ...

    async def delete_entity(self, entity_id: str) -> bool:
        """Delete the entity and every relationship touching it; True if it existed."""
        ...

    async def delete_relationship(self, relationship_id: str) -> bool:
        """Delete the relationship; True if it existed."""
        ...

    async def get_neighbors(
        self, entity_id: str, *, depth: int = 1, relationship_types: Sequence[str] | None = None
    ) -> SubGraph:
        """Breadth-first over undirected edges up to ``depth`` hops; empty if the entity is absent."""
        ...

    async def counts(self) -> GraphCounts:
        """How many entities and relationships, by type."""
        ...


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{what} is a non-empty string, got {value!r}")
    return value


def check_entity(entity: Entity) -> Entity:
    """``entity`` with a JSON copy of its properties, checked."""
    _text(entity.id, "an entity id")
    _text(entity.type, f"entity {entity.id!r}: its type")
    props = check_metadata(entity.properties, f"entity {entity.id!r} properties")
    return Entity(entity.id, entity.type, props)


def check_relationship(rel: Relationship) -> Relationship:
    """``rel`` with a JSON copy of its properties, checked."""
    _text(rel.id, "a relationship id")
    _text(rel.source_id, f"relationship {rel.id!r}: its source_id")
    _text(rel.target_id, f"relationship {rel.id!r}: its target_id")
    _text(rel.type, f"relationship {rel.id!r}: its type")
    props = check_metadata(rel.properties, f"relationship {rel.id!r} properties")
    return Relationship(rel.id, rel.source_id, rel.target_id, rel.type, props)


def check_depth(depth: int) -> int:
    """``depth`` if it is a usable number of hops (0 gives the entity alone)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise InvalidInputError(f"depth is a whole number of hops >= 0, got {depth!r}")
    return depth


def check_types(relationship_types: Sequence[str] | None) -> frozenset[str] | None:
    """The relationship types to follow (None: all); an empty list follows none."""
    if relationship_types is None:
        return None
    if isinstance(relationship_types, str):
        raise InvalidInputError("relationship_types is a list of type names, not one string")
    return frozenset(_text(t, "a relationship type") for t in relationship_types)


def missing_end(rel: Relationship, which: str, entity_id: str) -> EntityNotFoundError:
    """The error for a relationship whose ``which`` end names no entity."""
    return EntityNotFoundError(f"relationship {rel.id!r}: its {which} entity {entity_id!r} does not exist")


class InMemoryGraphStore:
    """:class:`GraphStore` in two dicts (ravi's name): for tests and small graphs."""

    def __init__(self) -> None:
        self._entities: dict[str, Entity] = {}
        self._relationships: dict[str, Relationship] = {}
        self._lock = asyncio.Lock()

    async def _write_entities(self, entities: Sequence[Entity], replace: bool) -> list[str]:
        checked = [check_entity(e) for e in entities]
        async with self._lock:
            for e in checked:
                if replace or e.id not in self._entities:
                    self._entities[e.id] = e
        return [e.id for e in checked]

    async def add_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert the entities whose ids are absent (present ones are kept); returns their ids."""
        return await self._write_entities(entities, False)

    async def upsert_entities(self, entities: Sequence[Entity]) -> list[str]:
        """Insert or replace the entities; returns their ids."""
        return await self._write_entities(entities, True)

    async def _write_relationships(self, relationships: Sequence[Relationship], replace: bool) -> list[str]:
        checked = [check_relationship(r) for r in relationships]
        async with self._lock:
            for r in checked:
                for which, end in (("source", r.source_id), ("target", r.target_id)):
                    if end not in self._entities:
                        raise missing_end(r, which, end)
            for r in checked:
                if replace or r.id not in self._relationships:
                    self._relationships[r.id] = r
        return [r.id for r in checked]

    async def add_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert the relationships whose ids are absent; both ends must exist."""
        return await self._write_relationships(relationships, False)

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> list[str]:
        """Insert or replace the relationships; both ends must exist."""
        return await self._write_relationships(relationships, True)

    async def get_entity(self, entity_id: str) -> Entity | None:
        """The entity with this id, or None."""
        return self._entities.get(entity_id)

    async def get_relationship(self, relationship_id: str) -> Relationship | None:
        """The relationship with this id, or None."""
        return self._relationships.get(relationship_id)

    async def delete_entity(self, entity_id: str) -> bool:
        """Delete the entity and every relationship touching it (DETACH DELETE)."""
        async with self._lock:
            if self._entities.pop(entity_id, None) is None:
                return False
            for rid, r in list(self._relationships.items()):
                if entity_id in (r.source_id, r.target_id):
                    del self._relationships[rid]
            return True

    async def delete_relationship(self, relationship_id: str) -> bool:
        """Delete the relationship; True if it existed."""
        async with self._lock:
            return self._relationships.pop(relationship_id, None) is not None

    async def get_neighbors(
        self, entity_id: str, *, depth: int = 1, relationship_types: Sequence[str] | None = None
    ) -> SubGraph:
        """Breadth-first over undirected edges up to ``depth`` hops; empty if the entity is absent."""
        check_depth(depth)
        types = check_types(relationship_types)
        if entity_id not in self._entities:
            return SubGraph()
        adjacent: dict[str, list[Relationship]] = {}
        for r in self._relationships.values():
            if types is None or r.type in types:
                adjacent.setdefault(r.source_id, []).append(r)
                adjacent.setdefault(r.target_id, []).append(r)
        hops = {entity_id: 0}
        followed: dict[str, Relationship] = {}
        frontier = deque([entity_id])
        while frontier:
            node = frontier.popleft()
            if hops[node] >= depth:
                continue
            for r in adjacent.get(node, ()):
                followed[r.id] = r
                other = r.target_id if r.source_id == node else r.source_id
                if other not in hops:
                    hops[other] = hops[node] + 1
                    frontier.append(other)
        order = sorted(hops, key=lambda n: (hops[n], n))
        return SubGraph(
            tuple(self._entities[n] for n in order if n in self._entities),
            tuple(followed[k] for k in sorted(followed)),
        )

    async def counts(self) -> GraphCounts:
        """How many entities and relationships, by type."""
        et: dict[str, int] = {}
        rt: dict[str, int] = {}
        for e in self._entities.values():
            et[e.type] = et.get(e.type, 0) + 1
        for r in self._relationships.values():
            rt[r.type] = rt.get(r.type, 0) + 1
        return GraphCounts(
            len(self._entities), len(self._relationships), dict(sorted(et.items())), dict(sorted(rt.items()))
        )
