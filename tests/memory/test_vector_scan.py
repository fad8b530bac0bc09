"""SQLite's in-memory exact vector scan: exact on random vectors, current after writes by this
connection and by another one (another process's commit moves data_version), and the codes'
path still answers a collection past the memory limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from axio_context.memory import Document
from axio_context_sqlite import connect
from axio_context_sqlite.memory import SQLiteVectorStore, vector_scan


def _docs(n: int, d: int, seed: int = 0) -> tuple[list[Document], np.ndarray]:
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n, d)).astype(np.float32)
    return [
        Document(f"d{i:05}", f"text {i}", data[i].tolist(), {"i": i, "odd": i % 2 == 1}) for i in range(n)
    ], data


def _exact(data: np.ndarray, query: np.ndarray, k: int, keep: np.ndarray | None = None) -> list[str]:
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [f"d{i:05}" for i in order[:k] if scores[i] > -np.inf]


async def test_random_vectors_are_found_exactly_with_and_without_a_filter(tmp_path: Path) -> None:
    docs, data = _docs(3000, 64)
    queries = np.random.default_rng(9).standard_normal((20, 64)).astype(np.float32)
    odd = np.arange(len(docs)) % 2 == 1
    async with connect(tmp_path / "v.db") as conn:
        store = SQLiteVectorStore(conn)
        await store.add(docs)
        for q in queries:
            assert [r.id for r in await store.search(q.tolist(), limit=10)] == _exact(data, q, 10)
            hits = await store.search(q.tolist(), limit=7, filter={"odd": True})
            assert [r.id for r in hits] == _exact(data, q, 7, odd)


async def test_the_copy_follows_writes_of_this_and_of_another_connection(tmp_path: Path) -> None:
    docs, data = _docs(200, 16)
    target = data[5].tolist()
    async with connect(tmp_path / "v.db") as one, connect(tmp_path / "v.db") as two:
        a, b = SQLiteVectorStore(one), SQLiteVectorStore(two)
        await a.add(docs)
        assert [r.id for r in await b.search(target, limit=1)] == ["d00005"]  # b holds a copy now
        await a.upsert([Document("d00005", "moved", [-x for x in target], {})])
        assert [r.id for r in await b.search(target, limit=1)] != ["d00005"]
        await a.add([Document("new", "twin", target, {})])
        assert [r.id for r in await b.search(target, limit=1)] == ["new"]
        assert await b.delete(["new"]) == 1  # b's own write
        assert "new" not in [r.id for r in await b.search(target, limit=5)]
        assert "new" not in [r.id for r in await a.search(target, limit=5)]


async def test_past_the_memory_limit_the_codes_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, data = _docs(300, 32)
    monkeypatch.setattr(vector_scan, "MAX_BYTES", 300 * 32 * 4 - 1)
    async with connect(tmp_path / "v.db") as conn:
        store = SQLiteVectorStore(conn)
        await store.add(docs)
        assert [r.id for r in await store.search(data[7].tolist(), limit=1)] == ["d00007"]
        assert getattr(conn._conn, "_axio_vector_copies", {}) == {}  # nothing was held
