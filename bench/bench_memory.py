"""Issue 21's memory-store benchmark: vector search, blob throughput, graph neighbours (SQLite).

- **vectors**: ``--docs`` documents (default 100,000) of ``--dim`` (384) dimensions in one
  collection, each with ``{"bucket": i % 10}`` metadata. Queries search with the filter
  ``{"bucket": 3}`` (10% of the documents) and without; reported: median and p95 latency, and
  recall@10 against an exact NumPy scan of the same (filtered) set. Two datasets: ``clustered``
  (1,000 Gaussian clusters, queries are noisy copies of documents: vectors with real neighbours,
  as text embeddings have) and ``random`` (i.i.d. Gaussian: no real neighbours, the worst case
  for any quantization). ``--candidates`` sets the coarse pass's size (default 100).
- **blobs**: one ``--blob-mb`` (200) MB upload through ``upload_stream`` from 1 MiB chunks and
  its ``download_stream``, in MB/s, with the peak of Python's heap during each; then 500 x 64 KiB
  ``upload``/``download`` calls.
- **graph**: ``--edges`` (100,000) random relationships of three types over edges/5 entities;
  ``get_neighbors`` at depth 2 from 200 random entities, with and without a type filter.

Run: ``python -m bench.bench_memory`` (``--quick`` for a smoke run, ``--only`` for one part).
Prints a table and, with ``--json FILE``, writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from axio_context.memory import Document, Entity, Relationship
from axio_context_sqlite import connect
from axio_context_sqlite.memory import SQLiteBlobStore, SQLiteGraphStore, SQLiteVectorStore

MiB = 1024 * 1024


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
    }


async def _timed(calls: list[Callable[[], Awaitable[Any]]]) -> tuple[list[float], list[Any]]:
    times, results = [], []
    for call in calls:
        start = time.perf_counter()
        results.append(await call())
        times.append(time.perf_counter() - start)
    return times, results


def _dataset(
    kind: str, n: int, dim: int, queries: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    if kind == "random":
        docs = rng.standard_normal((n, dim), dtype=np.float32)
        qs = rng.standard_normal((queries, dim), dtype=np.float32)
    else:
        centers = rng.standard_normal((1000, dim), dtype=np.float32)
        docs = centers[rng.integers(0, 1000, n)] + 0.35 * rng.standard_normal((n, dim), dtype=np.float32)
        qs = docs[rng.integers(0, n, queries)] + 0.2 * rng.standard_normal((queries, dim), dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    return docs, qs


async def bench_vectors(
    db: Path, kind: str, n: int, dim: int, queries: int, candidates: int
) -> dict[str, Any]:
    rng = np.random.default_rng(21)
    docs, qs = _dataset(kind, n, dim, queries, rng)
    buckets = np.arange(n) % 10
    async with connect(db) as conn:
        store = SQLiteVectorStore(conn, candidates=candidates)
        start = time.perf_counter()
        for lo in range(0, n, 2000):
            await store.add(
                [
                    Document(f"d{i}", f"document {i}", docs[i].tolist(), {"bucket": int(buckets[i])})
                    for i in range(lo, min(n, lo + 2000))
                ],
                collection=kind,
            )
        load_s = time.perf_counter() - start
        out: dict[str, Any] = {"documents": n, "dimension": dim, "load_s": round(load_s, 1)}
        for label, flt in (("filter_10pct", {"bucket": 3}), ("no_filter", None)):
            mask = buckets == 3 if flt else np.ones(n, dtype=bool)
            ids = np.flatnonzero(mask)
            calls = [
                (lambda q=q, flt=flt: store.search(q.tolist(), collection=kind, limit=10, filter=flt))
                for q in qs
            ]
            await calls[0]()  # warm the page cache
            times, results = await _timed(calls)
            hit = 0
            for q, res in zip(qs, results, strict=True):
                exact = ids[np.argsort(-(docs[ids] @ q), kind="stable")[:10]]
                hit += len({f"d{i}" for i in exact} & {r.id for r in res})
                assert all(r.metadata["bucket"] == 3 for r in res) if flt else True
                assert len(res) == 10
            out[label] = {**_ms(times), "recall_at_10": round(hit / (10 * len(qs)), 3)}
    return out


async def bench_blobs(db: Path, size_mb: int) -> dict[str, Any]:
    piece = random.Random(1).randbytes(MiB)
    async with connect(db) as conn:
        store = SQLiteBlobStore(conn, max_size=max(size_mb, 1) * MiB + 1)

        async def source() -> AsyncIterator[bytes]:
            for _ in range(size_mb):
                yield piece

        # Python's heap, not RSS: reads go through SQLite's memory map, whose file pages count in
        # RSS without being a copy of the file.
        tracemalloc.start()
        start = time.perf_counter()
        await store.upload_stream("big.bin", source())
        up = time.perf_counter() - start
        _, up_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        start = time.perf_counter()
        got = 0
        async for chunk in store.download_stream("big.bin"):
            got += len(chunk)
        down = time.perf_counter() - start
        _, down_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert got == size_mb * MiB
        small = [random.Random(k).randbytes(64 * 1024) for k in range(500)]
        start = time.perf_counter()
        for k, data in enumerate(small):
            await store.upload(f"small/{k}", data)
        small_up = time.perf_counter() - start
        start = time.perf_counter()
        for k in range(len(small)):
            await store.download(f"small/{k}")
        small_down = time.perf_counter() - start
    return {
        "stream_mb": size_mb,
        "upload_stream_mb_s": round(size_mb / up, 1),
        "download_stream_mb_s": round(size_mb / down, 1),
        "upload_peak_heap_mb": round(up_peak / MiB, 1),
        "download_peak_heap_mb": round(down_peak / MiB, 1),
        "small_64k_upload_per_s": round(len(small) / small_up),
        "small_64k_download_per_s": round(len(small) / small_down),
    }


async def bench_graph(db: Path, edges: int) -> dict[str, Any]:
    rng = random.Random(3)
    nodes = max(edges // 5, 10)
    ids = [f"e{i}" for i in range(nodes)]
    async with connect(db) as conn:
        store = SQLiteGraphStore(conn)
        start = time.perf_counter()
        for lo in range(0, nodes, 10_000):
            await store.add_entities(
                [Entity(i, "Thing", {"n": k}) for k, i in enumerate(ids[lo : lo + 10_000])]
            )
        for lo in range(0, edges, 10_000):
            await store.add_relationships(
                [
                    Relationship(
                        f"r{k}", rng.choice(ids), rng.choice(ids), rng.choice(["KNOWS", "OWNS", "LIKES"])
                    )
                    for k in range(lo, min(edges, lo + 10_000))
                ]
            )
        load_s = time.perf_counter() - start
        starts = [rng.choice(ids) for _ in range(200)]
        out: dict[str, Any] = {"entities": nodes, "relationships": edges, "load_s": round(load_s, 1)}
        for label, types in (("depth2", None), ("depth2_one_type", ["KNOWS"])):
            calls = [
                (lambda s=s, types=types: store.get_neighbors(s, depth=2, relationship_types=types))
                for s in starts
            ]
            await calls[0]()
            times, results = await _timed(calls)
            out[label] = {
                **_ms(times),
                "mean_entities": round(statistics.mean(len(r.entities) for r in results), 1),
                "mean_relationships": round(statistics.mean(len(r.relationships) for r in results), 1),
            }
    return out


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        root = Path(tmp)
        if args.only in (None, "blobs"):
            results["blobs"] = await bench_blobs(root / "b.db", args.blob_mb)
        if args.only in (None, "graph"):
            results["graph"] = await bench_graph(root / "g.db", args.edges)
        if args.only not in (None, "vectors"):
            return results
        results["vectors"] = {
            kind: await bench_vectors(
                root / f"v-{kind}.db", kind, args.docs, args.dim, args.queries, args.candidates
            )
            for kind in ("clustered", "random")
        }
    return results


def _print(results: dict[str, Any]) -> None:
    for kind, r in results.get("vectors", {}).items():
        for label in ("filter_10pct", "no_filter"):
            f = r[label]
            print(
                f"vectors {kind:<9} {label:<12} {r['documents']:,} x {r['dimension']}:"
                f" median {f['median_ms']} ms, p95 {f['p95_ms']} ms, recall@10 {f['recall_at_10']}"
            )
    b = results.get("blobs")
    if b:
        print(
            f"blobs   {b['stream_mb']} MB stream: upload {b['upload_stream_mb_s']} MB/s, download "
            f"{b['download_stream_mb_s']} MB/s, peak Python heap {b['upload_peak_heap_mb']} /"
            f" {b['download_peak_heap_mb']} MB; 64 KiB: "
            f"{b['small_64k_upload_per_s']}/s up, {b['small_64k_download_per_s']}/s down"
        )
    g = results.get("graph")
    for label in ("depth2", "depth2_one_type") if g else ():
        assert g is not None
        f = g[label]
        print(
            f"graph   {label:<16} {g['relationships']:,} edges: median {f['median_ms']} ms,"
            f" p95 {f['p95_ms']} ms ({f['mean_entities']} entities,"
            f" {f['mean_relationships']} relationships on average)"
        )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--blob-mb", type=int, default=200)
    parser.add_argument("--edges", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--only", choices=["vectors", "blobs", "graph"], help="run one part")
    args = parser.parse_args()
    if args.quick:
        args.docs, args.queries, args.blob_mb, args.edges = 5_000, 10, 8, 5_000
    results = asyncio.run(main(args))
    _print(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    cli()
