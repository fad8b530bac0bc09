"""Issue 32's vector-store rows: our SQLite vector store against LangGraph's ``SqliteStore`` with
a vector index, on the same ``n`` x ``dim`` random i.i.d. unit vectors (``bench.bench_memory``'s
``random`` dataset), default settings on both sides.

- **insert**: every vector stored (ours: ``add`` in batches of 2,000; LangGraph: ``batch`` of
  ``PutOp`` in batches of 2,000, its embedding function a lookup of the precomputed vector, so
  neither side pays for a model; both sides' float lists are made before the clock starts).
- **search**: top 10 of ``queries`` queries, median latency, and recall@10 against an exact NumPy
  scan.

LangGraph's store takes a ``sqlite3.Connection``; this machine's stdlib ``sqlite3`` cannot load
sqlite-vec, so it gets a ``sqlean`` connection opened the way its ``from_conn_string`` opens one.
Part of ``python -m bench.peers``.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import sqlean

from axio_context.memory import Document
from axio_context_sqlite import connect
from axio_context_sqlite.memory import SQLiteVectorStore

from .bench_memory import _dataset

__all__ = ["run"]

BATCH = 2_000


def _recall(docs: np.ndarray, qs: np.ndarray, got: list[list[int]]) -> float:
    hit = 0
    for q, ids in zip(qs, got, strict=True):
        exact = set(np.argsort(-(docs @ q), kind="stable")[:10].tolist())
        hit += len(exact & set(ids))
    return hit / (10 * len(qs))


async def _ours(db: Path, docs: np.ndarray, qs: np.ndarray) -> dict[str, float]:
    n = len(docs)
    vectors = docs.tolist()  # made before the clock starts, as LangGraph's lookup table is
    async with connect(db) as conn:
        store = SQLiteVectorStore(conn)
        t = time.perf_counter()
        for lo in range(0, n, BATCH):
            await store.add(
                [Document(f"d{i}", f"document {i}", vectors[i]) for i in range(lo, min(n, lo + BATCH))],
                collection="bench",
            )
        insert = time.perf_counter() - t
        await store.search(qs[0].tolist(), collection="bench", limit=10)  # warm
        times, got = [], []
        for q in qs:
            t = time.perf_counter()
            res = await store.search(q.tolist(), collection="bench", limit=10)
            times.append(time.perf_counter() - t)
            got.append([int(r.id[1:]) for r in res])
    return {"insert_s": insert, "search_s": statistics.median(times), "recall": _recall(docs, qs, got)}


def _langgraph(db: Path, docs: np.ndarray, qs: np.ndarray) -> dict[str, float]:
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    n = len(docs)
    vectors = {f"document {i}": docs[i].tolist() for i in range(n)}
    vectors.update({f"query {j}": q.tolist() for j, q in enumerate(qs)})

    def embed(texts: list[str]) -> list[list[float]]:
        # the field's text, or (this version) the value's JSON: {"text": ...}
        return [vectors[t] if t in vectors else vectors[json.loads(t)["text"]] for t in texts]

    conn = sqlean.connect(str(db), check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(
            conn,  # type: ignore[arg-type]
            index={"dims": docs.shape[1], "embed": embed, "fields": ["text"]},
        )
        store.setup()
        t = time.perf_counter()
        for lo in range(0, n, BATCH):
            store.batch(
                [PutOp(("bench",), f"d{i}", {"text": f"document {i}"}) for i in range(lo, min(n, lo + BATCH))]
            )
        insert = time.perf_counter() - t
        store.search(("bench",), query="query 0", limit=10)  # warm
        times, got = [], []
        for j in range(len(qs)):
            t = time.perf_counter()
            res = store.search(("bench",), query=f"query {j}", limit=10)
            times.append(time.perf_counter() - t)
            got.append([int(r.key[1:]) for r in res])
    finally:
        conn.close()
    return {"insert_s": insert, "search_s": statistics.median(times), "recall": _recall(docs, qs, got)}


async def run(n: int = 10_000, dim: int = 384, queries: int = 50) -> dict[str, dict[str, float]]:
    """``{"ours": {...}, "langgraph": {...}}``: insert seconds, median search seconds, recall@10."""
    docs, qs = _dataset("random", n, dim, queries, np.random.default_rng(32))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="axio-peers-vec-") as tmp:
        # one side, then the other, then each again: the faster round of each is kept
        for round_ in range(2):
            for side in ("langgraph", "ours") if round_ else ("ours", "langgraph"):
                db = Path(tmp) / f"{side}-{round_}.db"
                got = await _ours(db, docs, qs) if side == "ours" else _langgraph(db, docs, qs)
                best = out.get(side)
                out[side] = (
                    got
                    if best is None
                    else {k: min(v, best[k]) if k != "recall" else v for k, v in got.items()}
                )
    return out
