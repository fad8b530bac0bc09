"""The SQLite vector and graph stores against their in-memory twins on larger random data: the
quantized vector search and the recursive neighbour query give the same answers."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from axio_context.embeddings import HashingEmbedder
from axio_context.memory import (
    Document,
    Entity,
    InMemoryGraphStore,
    InMemoryVectorStore,
    Relationship,
)
from axio_context_sqlite import Connection, connect
from axio_context_sqlite.memory import SQLiteGraphStore, SQLiteVectorStore


def _docs(n: int, dim: int, seed: int) -> list[Document]:
    rng = random.Random(seed)
    return [
        Document(
            f"d{i:04}",
            f"doc {i}",
            [rng.gauss(0, 1) for _ in range(dim)],
            {"group": i % 10, "tag": rng.choice(["x", "y", "z"])},
        )
        for i in range(n)
    ]


async def test_search_matches_exact_when_candidates_cover_the_filter(conn: Connection) -> None:
    docs = _docs(600, 32, 1)
    exact = InMemoryVectorStore()
    sqlite = SQLiteVectorStore(conn, candidates=100)
    await exact.add(docs)
    await sqlite.add(docs)
    rng = random.Random(2)
    for _ in range(10):
        q = [rng.gauss(0, 1) for _ in range(32)]
        # 60 documents match: fewer than the 100 candidates, so the answer is exact.
        flt = {"group": rng.randrange(10)}
        want = await exact.search(q, limit=10, filter=flt)
        got = await sqlite.search(q, limit=10, filter=flt)
        assert [h.id for h in got] == [h.id for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)


async def test_quantized_search_keeps_most_of_the_true_top_ten(conn: Connection) -> None:
    # Real-ish text vectors (the hashing embedder) over 2,000 documents: the coarse pass keeps
    # 100 candidates, so the answer is approximate; it holds nearly all of the exact top 10.
    embedder = HashingEmbedder(128)
    rng = random.Random(3)
    words = [f"w{i}" for i in range(400)]
    docs = [Document(f"t{i}", " ".join(rng.choices(words, k=12))) for i in range(2000)]
    exact = InMemoryVectorStore(embedder)
    sqlite = SQLiteVectorStore(conn, embedder=embedder)
    await exact.add(docs)
    await sqlite.add(docs)
    found = total = 0
    for _ in range(20):
        query = " ".join(rng.choices(words, k=5))
        want = {h.id for h in await exact.search_text(query, limit=10)}
        got = {h.id for h in await sqlite.search_text(query, limit=10)}
        found += len(want & got)
        total += len(want)
    assert found / total >= 0.9


async def test_vectors_survive_reopening(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteVectorStore(conn).add([Document("a", "x", [0.5, 0.25], {"k": 1})], collection="kb")
    async with connect(db_path) as conn:
        store = SQLiteVectorStore(conn)
        assert await store.get(["a"], collection="kb") == [Document("a", "x", [0.5, 0.25], {"k": 1})]
        [info] = await store.list_collections()
        assert (info.name, info.dimension, info.documents) == ("kb", 2, 1)
        assert [d.id for d in await store.documents("kb")] == ["a"]


async def _random_graph(stores: list[InMemoryGraphStore | SQLiteGraphStore], seed: int) -> list[str]:
    rng = random.Random(seed)
    ids = [f"n{i:03}" for i in range(120)]
    entities = [Entity(i, rng.choice(["A", "B"]), {"i": n}) for n, i in enumerate(ids)]
    rels = [
        Relationship(f"r{k:04}", rng.choice(ids), rng.choice(ids), rng.choice(["KNOWS", "OWNS", "LIKES"]))
        for k in range(260)
    ]
    for store in stores:
        await store.add_entities(entities)
        await store.add_relationships(rels)
    return ids


async def test_neighbors_match_the_in_memory_walk(conn: Connection) -> None:
    memory, sqlite = InMemoryGraphStore(), SQLiteGraphStore(conn)
    ids = await _random_graph([memory, sqlite], 4)
    rng = random.Random(5)
    for _ in range(40):
        start = rng.choice(ids)
        depth = rng.randrange(0, 4)
        types = rng.choice([None, ["KNOWS"], ["OWNS", "LIKES"]])
        want = await memory.get_neighbors(start, depth=depth, relationship_types=types)
        got = await sqlite.get_neighbors(start, depth=depth, relationship_types=types)
        assert got == want, (start, depth, types)


async def test_graph_survives_reopening(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteGraphStore(conn)
        await store.add_entities([Entity("a", "P"), Entity("b", "P")])
        await store.add_relationships([Relationship("ab", "a", "b", "KNOWS")])
    async with connect(db_path) as conn:
        sub = await SQLiteGraphStore(conn).get_neighbors("b")
        assert [e.id for e in sub.entities] == ["b", "a"]
        assert [e.id for e in await SQLiteGraphStore(conn).entities(entity_type="P")] == ["a", "b"]
