"""SQLite's in-memory exact vector scan: exact on random vectors, current after writes by this
connection and by another one (another process's commit moves data_version), and the codes'
path still answers a collection past the memory limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from axio_context.memory import Document
from axio_context.memory.vectors import DEFAULT_COLLECTION
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


def _codes(path: Path) -> list[bytes]:
    import sqlite3

    with sqlite3.connect(path) as raw:
        return [bytes(r[0]) for r in raw.execute("SELECT code FROM memory_documents ORDER BY id")]


async def test_a_small_collection_is_written_without_codes_and_the_codes_path_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, data = _docs(400, 32)
    async with connect(tmp_path / "v.db") as conn:
        await SQLiteVectorStore(conn).add(docs)
    assert set(_codes(tmp_path / "v.db")) == {b""}  # no code computed: nothing would read it
    monkeypatch.setattr(vector_scan, "MAX_BYTES", 0)  # nothing held in memory: the codes' path
    queries = np.random.default_rng(3).standard_normal((10, 32)).astype(np.float32)
    async with connect(tmp_path / "v.db") as conn:
        store = SQLiteVectorStore(conn, candidates=5)
        for q in queries:  # every uncoded document is re-scored: exact, whatever the candidates
            assert [r.id for r in await store.search(q.tolist(), limit=10)] == _exact(data, q, 10)


async def test_the_write_that_makes_a_collection_large_codes_every_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axio_context_sqlite.memory import vector_codes
    from axio_context_sqlite.store.vec import binary_code

    docs, data = _docs(300, 16)
    monkeypatch.setattr(vector_codes, "CODED_FROM", 250 * 16 * 4)
    async with connect(tmp_path / "v.db") as conn:
        store = SQLiteVectorStore(conn)
        await store.add(docs[:200])
        assert set(_codes(tmp_path / "v.db")) == {b""}
        await store.add(docs[200:260])  # 260 documents: past the mark, the first 200 coded too
        await store.upsert([*docs[260:], Document("d00003", "moved", data[9].tolist(), {})])
    codes = _codes(tmp_path / "v.db")
    assert len(codes) == 300
    expected = [binary_code(data[9 if i == 3 else i].tobytes()) for i in range(300)]
    assert codes == expected
    monkeypatch.setattr(vector_scan, "MAX_BYTES", 0)
    async with connect(tmp_path / "v.db") as conn:
        hits = await SQLiteVectorStore(conn).search(data[7].tolist(), limit=1)
        assert [r.id for r in hits] == ["d00007"]


async def test_a_collection_written_before_the_rule_keeps_coding(tmp_path: Path) -> None:
    import sqlite3

    docs, _ = _docs(20, 8)
    async with connect(tmp_path / "v.db") as conn:
        await SQLiteVectorStore(conn).add(docs[:10])
    with sqlite3.connect(tmp_path / "v.db") as raw:  # as an older version left it: no count row
        raw.execute("DELETE FROM settings WHERE key LIKE 'vector-codes:%'")
    async with connect(tmp_path / "v.db") as conn:
        await SQLiteVectorStore(conn).add(docs[10:])
    codes = _codes(tmp_path / "v.db")
    assert codes[:10] == [b""] * 10  # written while it was counted
    assert all(len(c) == 3 for c in codes[10:])  # 3 rotations of 8 bits


async def test_the_codes_path_runs_on_a_connection_that_deferred_sqlite_vec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection opened after another has proved sqlite-vec in this process defers loading it
    (a file without message codes); the vector store's codes' path still gets it, not the
    fallback that re-scores every document in Python."""
    async with connect(tmp_path / "first.db"):
        pass  # sqlite-vec proved in this process: later opens may defer it
    docs, data = _docs(300, 16)
    monkeypatch.setattr(vector_scan, "MAX_BYTES", 0)
    async with connect(tmp_path / "v.db") as conn:
        store = SQLiteVectorStore(conn)
        await store.add(docs)
        seen: list[str] = []
        await conn.set_trace_callback(seen.append)
        assert [r.id for r in await store.search(data[7].tolist(), limit=1)] == ["d00007"]
        assert any("vec_distance_cosine" in s for s in seen)  # re-scored by sqlite-vec in SQL


async def test_the_codes_path_passes_over_a_collection_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the memory limit, a coded collection is ranked by its codes in one pass (no second
    scan for uncoded documents it cannot hold), and an uncoded one is re-scored exactly with no
    coarse pass over its empty codes."""
    from axio_context_sqlite.memory import vector_codes

    docs, data = _docs(300, 16)
    monkeypatch.setattr(vector_codes, "CODED_FROM", 100 * 16 * 4)
    monkeypatch.setattr(vector_scan, "MAX_BYTES", 0)
    async with connect(tmp_path / "v.db") as conn:
        store = SQLiteVectorStore(conn)
        await store.add(docs)  # past the (lowered) mark: coded
        await store.add(docs[:50], collection="small")  # below it: uncoded
        seen: list[str] = []
        await conn.set_trace_callback(seen.append)
        for collection in (DEFAULT_COLLECTION, "small"):
            seen.clear()
            hits = await store.search(data[7].tolist(), limit=1, collection=collection)
            assert [r.id for r in hits] == ["d00007"]
            scans = [s for s in seen if "vec_distance_cosine" in s]
            assert len(scans) == 1
            if collection == DEFAULT_COLLECTION:
                assert scans[0].count("FROM memory_documents WHERE collection") == 1
                assert "vec_distance_hamming" in scans[0]
            else:
                assert "vec_distance_hamming" not in scans[0]


async def test_upserting_the_same_documents_again_does_not_make_a_collection_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count toward the codes' mark is of documents added: a small collection upserted turn
    after turn (its ids already stored) stays uncoded, and writes no codes."""
    from axio_context_sqlite.memory import vector_codes

    docs, _ = _docs(40, 8)
    monkeypatch.setattr(vector_codes, "CODED_FROM", 100 * 8 * 4)
    async with connect(tmp_path / "v.db") as conn:
        store = SQLiteVectorStore(conn)
        for _ in range(5):  # 200 documents written, 40 in the collection
            await store.upsert(docs)
    assert set(_codes(tmp_path / "v.db")) == {b""}
