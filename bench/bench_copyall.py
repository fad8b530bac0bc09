"""``axio-context copy`` of the layers beside the sessions, against the raw drivers, in one run.

Fills a SQLite file through the public APIs with ``--usage`` usage records, a queue of
``--entries`` items and a vector collection of ``--docs`` documents (64 dimensions), then times:

- **to PostgreSQL**: ``copy_all`` into a fresh database, against asyncpg ``executemany`` of the
  same rows into bare tables of the same columns (the limit: no rollups, no comparison, no
  dump), per layer;
- **back to SQLite**: ``copy_all`` from that database into a fresh file, against plain
  ``sqlite3`` ``executemany`` of the same rows into bare tables in one transaction;
- **again**: a second copy with nothing left to copy (both sides dumped and compared).

Most of the PostgreSQL side's time is the collection's HNSW index, built as the documents go in
(as ``PostgresVectorStore.add`` builds it); the bare table has none.

Run: ``python -m bench.bench_copyall`` (starts its own embedded server). Ratios in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from axio_context.embeddings import HashingEmbedder
from axio_context.memory import Document
from axio_context.pools import ContextItem
from axio_context.usage_limits import RequestUsage
from axio_context_postgres.copying import copy_all
from axio_context_postgres.database import open_database as open_postgres
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_sqlite import SQLiteContextStore
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.database import open_database as open_sqlite
from axio_context_sqlite.memory import SQLiteVectorStore
from axio_context_sqlite.pools import SQLiteContextQueue
from axio_context_sqlite.usage import SQLiteUsageRecorder

LAYERS = ("usage", "pools", "collections")


async def fill(path: Path, usage: int, entries: int, docs: int) -> None:
    async with sqlite_connect(path) as conn:
        await SQLiteContextStore(conn, "s0", project="p").set_title("bench")
        recorder = SQLiteUsageRecorder(conn, "p")
        start = datetime(2026, 1, 1, tzinfo=UTC)
        for i in range(usage):
            await recorder.record(
                RequestUsage(input_tokens=100 + i % 50, output_tokens=20),
                session_id=f"s{i % 20}",
                model=f"m{i % 3}",
                at=start + timedelta(minutes=i),
            )
        queue: SQLiteContextQueue[Any] = await SQLiteContextQueue.open(conn, "log", entries)
        await queue.append(*(ContextItem(f"entry {i} " + "x" * 200) for i in range(entries)))
        vectors = SQLiteVectorStore(conn, embedder=HashingEmbedder(64))
        await vectors.add(
            [Document(f"d{i}", f"document number {i} about topic {i % 17}") for i in range(docs)]
        )


async def rows_of(path: Path) -> dict[str, list[Any]]:
    async with open_sqlite(path) as db:
        side = db.layers()
        return {layer: await side.dump(layer) for layer in LAYERS}


def _flat(layer: str, rows: list[Any]) -> list[tuple[Any, ...]]:
    """The rows a raw INSERT would write for ``layer`` (the same columns, in tuples)."""
    if layer == "usage":
        return [
            (
                r.at,
                r.session,
                r.agent,
                r.run,
                r.model,
                r.project,
                r.position,
                *r.counts,
                r.audio_seconds,
                r.cost,
            )
            for r in rows
        ]
    if layer == "pools":
        return [(e.seq, e.key, e.ord, e.removed, e.description, e.content) for p in rows for e in p.entries]
    return [(d.id, d.content, d.metadata, d.embedding, d.updated_at) for c in rows for d in c.documents]


_BARE = {
    "usage": "usage_raw (at bigint, session text, agent text, run text, model text, project text, position"
    " integer, c1 bigint, c2 bigint, c3 bigint, c4 bigint, c5 bigint, c6 bigint, c7 bigint, c8 bigint,"
    " c9 bigint, c10 bigint, c11 bigint, c12 bigint, audio double precision, cost text)",
    "pools": "pool_raw (seq bigint, key text, ord bigint, removed boolean, description text, content bytea)",
    "collections": "docs_raw (id text, content text, metadata text, embedding bytea, updated_at bigint)",
}


async def raw_postgres(url: str, flat: dict[str, list[tuple[Any, ...]]]) -> dict[str, float]:
    conn = await asyncpg.connect(url)
    try:
        out = {}
        for layer, rows in flat.items():
            await conn.execute(f"CREATE TABLE {_BARE[layer]}")
            name = _BARE[layer].split(" ", 1)[0]
            n = len(rows[0])
            start = time.perf_counter()
            async with conn.transaction():
                await conn.executemany(
                    f"INSERT INTO {name} VALUES ({', '.join(f'${i + 1}' for i in range(n))})", rows
                )
            out[layer] = time.perf_counter() - start
        return out
    finally:
        await conn.close()


def raw_sqlite(path: Path, flat: dict[str, list[tuple[Any, ...]]]) -> dict[str, float]:
    conn = sqlite3.connect(path)
    try:
        out = {}
        for layer, rows in flat.items():
            conn.execute(f"CREATE TABLE {_BARE[layer]}")
            name = _BARE[layer].split(" ", 1)[0]
            start = time.perf_counter()
            with conn:
                conn.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(rows[0]))})", rows)
            out[layer] = time.perf_counter() - start
        return out
    finally:
        conn.close()


async def timed_copy(src: str, dst: str) -> float:
    def opener(where: str) -> Any:
        return open_postgres(where) if where.startswith("postgresql://") else open_sqlite(where)

    async with opener(src) as a, opener(dst) as b:
        start = time.perf_counter()
        report = await copy_all(a, b)
        took = time.perf_counter() - start
        assert not report.conflicts
        return took


async def make_database(server: EmbeddedServer, name: str) -> str:
    conn = await asyncpg.connect(server.url())
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return server.url(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--usage", type=int, default=5000)
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--docs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, EmbeddedServer() as server:
        src = Path(folder) / "src.db"
        asyncio.run(fill(src, args.usage, args.entries, args.docs))
        flat = {layer: _flat(layer, rows) for layer, rows in asyncio.run(rows_of(src)).items()}
        total = sum(len(v) for v in flat.values())
        dst = asyncio.run(make_database(server, "copy_dst"))
        raw_dst = asyncio.run(make_database(server, "raw_dst"))
        to_pg = asyncio.run(timed_copy(str(src), dst))
        raw_pg = sum(asyncio.run(raw_postgres(raw_dst, flat)).values())
        back = Path(folder) / "back.db"
        to_sqlite = asyncio.run(timed_copy(dst, str(back)))
        raw_sq = sum(raw_sqlite(Path(folder) / "raw.db", flat).values())
        again = asyncio.run(timed_copy(str(src), dst))
        load = os.getloadavg()[0]
        print(
            f"rows: {', '.join(f'{k} {len(v)}' for k, v in flat.items())} ({total}); load average {load:.2f}"
        )
        print(f"{'':24}{'copy':>10}{'raw':>10}{'ratio':>8}{'rows/s':>10}")
        for label, took, raw in (
            ("SQLite -> PostgreSQL", to_pg, raw_pg),
            ("PostgreSQL -> SQLite", to_sqlite, raw_sq),
        ):
            print(f"{label:24}{took:>9.2f}s{raw:>9.2f}s{took / raw:>7.1f}x{total / took:>10.0f}")
        print(f"{'again (nothing to copy)':24}{again:>9.2f}s")


if __name__ == "__main__":
    main()
