"""HNSW recall@10 against exact search on realistic vectors, and what m, ef_construction and
ef_search buy, in one run: ``python -m bench.bench_postgres_recall [--messages 100000]``.

Random Gaussian vectors are HNSW's worst case (no neighbourhood structure, every point about
equally far: recall@10 0.24 at ef_search 200 in bench_postgres). Messages are not random: this
bench embeds agent-transcript text with the hashing embedder (384 dimensions, what
``axio-context reindex`` uses offline). The corpus is every message of tests/data's two
retrieval sets, cut into lines and sentences, and recombined (1-3 fragments, plus a few workload
words and a unique id) into ``--messages`` messages; the queries are the sets' labelled queries.

For each index build (m, ef_construction) and each ef_search it reports:

- **recall@10**: the share of the exact top 10 (by id) the index returns;
- **recall@10, ties counted**: an index hit counts when it is as near as the exact 10th (the
  hashing embedder gives many messages the very same distance, and which of the tied ones a
  search returns is arbitrary; this is what a person sees);
- the median latency of the search, as a ratio to the exact scan's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from axio_context.embeddings import HashingEmbedder

ROOT = Path(__file__).resolve().parent.parent
SETS = ("tests/data/agent_retrieval.json", "tests/data/retrieval.json")
BUILDS = ((16, 64), (16, 128), (24, 128), (32, 200))
EF_SEARCH = (40, 100, 200, 400, 800)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def corpus(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """``n`` message texts recombined from tests/data's retrieval sets, and the sets' queries."""
    fragments: list[str] = []
    queries: list[str] = []
    for name in SETS:
        data = json.loads((ROOT / name).read_text())
        for session in data["sessions"]:
            for message in session["messages"]:
                for text in _strings(message["content"]):
                    fragments += [f.strip() for f in re.split(r"[\n.!?]+", text) if len(f.strip()) > 3]
        queries += [q["query"] for q in data["queries"]]
    from bench.workload import _WORDS as words

    rng = random.Random(seed)
    texts = [
        " ".join(rng.sample(fragments, rng.randint(1, 3)) + rng.sample(words, rng.randint(0, 3)) + [f"id{i}"])
        for i in range(n)
    ]
    return texts, queries


async def _search(conn: Any, q: Any, exact: bool, ef: int) -> tuple[list[int], list[float], float]:
    async with conn.transaction():
        if exact:
            await conn.execute("SET LOCAL enable_indexscan = off")
        else:
            await conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
        t = time.perf_counter()
        rows = await conn.fetch(
            "SELECT id, embedding <=> $1 FROM recall_vecs ORDER BY embedding <=> $1 LIMIT 10", q
        )
        took = time.perf_counter() - t
    return [r[0] for r in rows], [float(r[1]) for r in rows], took


async def run(url: str, n: int, builds: tuple[tuple[int, int], ...]) -> list[dict[str, Any]]:
    import asyncpg
    from pgvector.asyncpg import register_vector

    texts, queries = corpus(n)
    emb = HashingEmbedder(384)
    t = time.perf_counter()
    vecs = np.asarray(await emb.embed(texts), dtype=np.float32)
    qvecs = [np.asarray(v, dtype=np.float32) for v in await emb.embed(queries)]
    qvecs = [q for q in qvecs if q.any()]
    print(f"# embedded {n:,} messages and {len(qvecs)} queries in {time.perf_counter() - t:.0f} s")
    conn = await asyncpg.connect(url)
    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    await register_vector(conn)
    await conn.execute("DROP TABLE IF EXISTS recall_vecs")
    await conn.execute("CREATE TABLE recall_vecs (id integer PRIMARY KEY, embedding vector(384))")
    await conn.copy_records_to_table("recall_vecs", records=[(i, v) for i, v in enumerate(vecs)])
    await conn.execute("ANALYZE recall_vecs")
    exact = [await _search(conn, q, True, 0) for q in qvecs]
    exact_time = statistics.median(e[2] for e in exact)
    out: list[dict[str, Any]] = []
    await conn.execute("SET maintenance_work_mem = '1GB'")
    for m, efc in builds:
        await conn.execute("DROP INDEX IF EXISTS recall_hnsw")
        t = time.perf_counter()
        await conn.execute(
            f"CREATE INDEX recall_hnsw ON recall_vecs USING hnsw (embedding vector_cosine_ops)"
            f" WITH (m = {m}, ef_construction = {efc})"
        )
        build = time.perf_counter() - t
        for ef in EF_SEARCH:
            strict, tied, took = [], [], []
            for q, (ids, dists, _) in zip(qvecs, exact, strict=True):
                got, got_d, s = await _search(conn, q, False, ef)
                strict.append(len(set(got) & set(ids)) / len(ids))
                tied.append(sum(d <= dists[-1] + 1e-6 for d in got_d) / len(ids))
                took.append(s)
            row = {
                "m": m,
                "ef_construction": efc,
                "ef_search": ef,
                "build_s": build,
                "recall": statistics.mean(strict),
                "recall_ties": statistics.mean(tied),
                "latency_vs_exact": statistics.median(took) / exact_time,
            }
            out.append(row)
            print(
                f"m={m:<3} ef_construction={efc:<4} ef_search={ef:<4} build {build:6.1f} s"
                f"  recall@10 {row['recall']:.3f}  ties counted {row['recall_ties']:.3f}"
                f"  latency {row['latency_vs_exact']:.3f} x exact ({exact_time * 1e3:.0f} ms)",
                flush=True,
            )
    await conn.close()
    return out


async def amain(args: argparse.Namespace) -> None:
    import asyncpg

    from axio_context_postgres.embedded import EmbeddedServer

    builds = tuple(tuple(int(x) for x in b.split(",")) for b in args.builds) if args.builds else BUILDS
    with EmbeddedServer() as server:
        admin = await asyncpg.connect(server.url())
        await admin.execute("CREATE DATABASE recall")
        await admin.close()
        print(f"# bench_postgres_recall: {args.messages:,} messages x 384 (hashing embedder)")
        await run(server.url("recall"), args.messages, builds)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--builds", nargs="*", help="m,ef_construction pairs (default: a small grid)")
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
