"""Context queues and pools on PostgreSQL against SQLite and the raw driver, in one run.

Figures, each a median per operation (microseconds) and a ratio to its reference:

- **queue append** of one item: ``PostgresContextQueue.append`` (one transaction: the row lock,
  the insert, the window's eviction, the version bump) against the raw limit, asyncpg doing one
  ``INSERT`` in a transaction per item, and against ``SQLiteContextQueue.append``.
- **pool add** up to ``--items`` items, and **select** at ``--items`` items (keyword only, and
  with the hashing embedder: pgvector's ``<=>``), PostgreSQL against SQLite.
- **branch** at 100 and at ``--items`` items: the growth ratio (1.0 = flat: O(1), copy-on-write).
- **writers**: adds per second into ONE pool by 1 and by 4 concurrent connections (each add
  locks the pool's row, so they take turns: the figure says what that serialisation costs), and
  by 4 connections each on its own pool (no shared lock). A writer whose copy another one made
  stale reads back only the others' changes (``axio_context/pools/sql/changes.py``); "4
  writers, whole reload" is the same run with every stale writer reading the whole pool again
  instead (what it did before: the copy's mark dropped before each add), so the two are compared
  in one run.

Run: ``python -m bench.bench_pgpools [--items 2000]`` (starts an embedded PostgreSQL, fsync off).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from axio_context.embeddings import HashingEmbedder
from axio_context.pools import ContextItem
from axio_context_postgres import connect as pg_connect
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue

WORDS = ["parser", "database", "release", "weather", "report", "margin", "revenue", "token", "cache"]
QUERIES = ["parser release", "weather report", "margin revenue", "token cache", "database"]


def _description(i: int) -> str:
    return f"note {i}: {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} {WORDS[(i * 3) % len(WORDS)]}"


async def _median_us(n: int, op: Callable[[int], Awaitable[Any]]) -> float:
    samples = []
    for i in range(n):
        t = time.perf_counter()
        await op(i)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


async def _raw_append(pool: Any, n: int) -> float:
    await pool.execute("CREATE TABLE raw_items (seq bigserial PRIMARY KEY, description text, content bytea)")

    async def op(i: int) -> None:
        async with pool.acquire() as c, c.transaction():
            await c.execute(
                "INSERT INTO raw_items (description, content) VALUES ($1, $2)", _description(i), b"x" * 40
            )

    return await _median_us(n, op)


async def _writers(pool: Any, name: str, writers: int, per: int, shared: bool, whole: bool = False) -> float:
    pools = [await PostgresContextPool.open(pool, name if shared else f"{name}-{w}") for w in range(writers)]

    async def write(w: int) -> None:
        for i in range(per):
            if whole:  # no mark: a stale add reads the whole pool back (the former behaviour)
                pools[w]._mark = None
            await pools[w].add(ContextItem(b"x" * 40, _description(i), f"{w}-{i}"))

    t = time.perf_counter()
    await asyncio.gather(*(write(w) for w in range(writers)))
    return writers * per / (time.perf_counter() - t)


async def _backend(
    queue_open: Callable[..., Awaitable[Any]], pool_open: Callable[..., Awaitable[Any]], items: int
) -> dict[str, float]:
    out: dict[str, float] = {}
    q = await queue_open("q", 50)
    out["queue append"] = await _median_us(items, lambda i: q.append(ContextItem(b"x" * 40)))
    p = await pool_open("p")
    out["pool add"] = await _median_us(
        items, lambda i: p.add(ContextItem(b"x" * 40, _description(i), f"k{i}"))
    )
    out["select"] = await _median_us(50, lambda i: p.select(QUERIES[i % len(QUERIES)], 5))
    e = await pool_open("e", embedder=HashingEmbedder(384))
    for i in range(items):
        await e.add(ContextItem(b"x" * 40, _description(i), f"k{i}"))
    out["select+vectors"] = await _median_us(50, lambda i: e.select(QUERIES[i % len(QUERIES)], 5))
    small = await pool_open("small")
    for i in range(100):
        await small.add(ContextItem(b"x" * 40, _description(i), f"k{i}"))
    out["branch @100"] = await _median_us(20, lambda i: small.branch())
    out[f"branch @{items}"] = await _median_us(20, lambda i: p.branch())
    return out


async def main(items: int) -> None:
    with EmbeddedServer() as server, tempfile.TemporaryDirectory() as tmp:
        pool = await pg_connect(server.url(), min_size=4, max_size=8)
        conn = await sqlite_connect(Path(tmp) / "pools.db")
        try:
            raw = await _raw_append(pool, items)
            pg = await _backend(
                lambda *a, **k: PostgresContextQueue.open(pool, *a, **k),
                lambda *a, **k: PostgresContextPool.open(pool, *a, **k),
                items,
            )
            lite = await _backend(
                lambda *a, **k: SQLiteContextQueue.open(conn, *a, **k),
                lambda *a, **k: SQLiteContextPool.open(conn, *a, **k),
                items,
            )
            per = max(50, items // 8)
            w1 = await _writers(pool, "w1", 1, per, shared=True)
            w4 = await _writers(pool, "w4", 4, per, shared=True)
            w4w = await _writers(pool, "w4w", 4, per, shared=True, whole=True)
            w4s = await _writers(pool, "w4s", 4, per, shared=False)
        finally:
            await pool.close()
            await conn.close()
    print(f"context pools, {items} items; median us per operation (lower is better)")
    print(f"{'':18s}{'postgres':>10s}{'sqlite':>10s}{'pg/sqlite':>11s}")
    for key in pg:
        print(f"{key:18s}{pg[key]:10.0f}{lite[key]:10.0f}{pg[key] / lite[key]:10.2f}x")
    print(
        f"raw asyncpg INSERT+COMMIT: {raw:.0f} us; queue append is {pg['queue append'] / raw:.2f}x the limit"
    )
    for name, figures in (("postgres", pg), ("sqlite", lite)):
        growth = figures[f"branch @{items}"] / figures["branch @100"]
        print(f"branch growth 100 -> {items} items ({name}): {growth:.2f}x (1.0 = flat)")
    print(
        f"adds/s into one pool: 1 writer {w1:.0f}, 4 writers {w4:.0f} ({w4 / w1:.2f}x),"
        f" 4 writers, whole reload {w4w:.0f} ({w4w / w1:.2f}x; changes only: {w4 / w4w:.2f}x that);"
        f" 4 writers on 4 pools {w4s:.0f} ({w4s / w1:.2f}x)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    asyncio.run(main(parser.parse_args().items))
