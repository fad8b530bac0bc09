"""Expiry (:mod:`axio_context.expiry`): a sweep over 100,000 expired items, and what the expiry
filter costs a read, on a SQLite file and on PostgreSQL, in one run.

Figures:

- **sweep**: ``count_expired`` then ``sweep_expired`` of the blob store over ``--items`` expired
  keys (each with its own small bytes, so every key frees a ``blobs`` row), and of the task store
  over as many expired boards of one task each; beside them ``--items`` live keys and boards the
  sweep must leave (it reads only expired rows, through the partial index). The items are written
  by raw statements in one transaction (the set-up is not what is measured).
- **pool items**: ``count_expired`` then ``sweep_expired`` of the context pools over ``--items``
  expired items of one pool beside as many live items of it (each its own key, written by raw
  statements as a pool's log holds them); the sweep deletes each expired entry (nothing older of
  its key to hide) and lowers the pool's size, a batch of 1,000 a transaction.
- **read filter**: the median of ``--reads`` calls over the live keys, one after the other in
  the same process: ``stat(key)`` of the store (the expiry check, then the backend's lookup) against
  the backend's own ``stat`` statement run alone through the same runner (what ``stat`` was before
  expiry); and a range of 50 keys by prefix, the same SQL with and without the expiry condition,
  beside the store's ``list_keys(prefix, limit=50)``.

Run: ``python -m bench.bench_expiry [--items 100000] [--reads 2000] [--pools-only]`` (starts an
embedded PostgreSQL, fsync off; ``--pools-only``: only the pool items' figures).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from axio_context.memory.blobs_sql import SQLBlobStore
from axio_context.memory.tasks_sql import SQLTaskStore
from axio_context.pools.sql import PoolSQL
from axio_context.pools.sql.expiry import SQLPoolExpiry
from axio_context.sql import Dialect, ExecuteMany, Plan, Rows, Runner
from axio_context_postgres import connect as pg_connect
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.memory import PostgresBlobStore, PostgresTaskStore
from axio_context_postgres.memory.blobs import STATEMENTS as PG_BLOBS
from axio_context_postgres.pools import PostgresContextPool
from axio_context_postgres.pools.dialect import POSTGRES_POOLS
from axio_context_postgres.runner import PostgresRunner
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.memory import SQLiteBlobStore, SQLiteTaskStore
from axio_context_sqlite.memory.blobs import STATEMENTS as SQLITE_BLOBS
from axio_context_sqlite.pools import SQLiteContextPool
from axio_context_sqlite.pools.dialect import SQLITE_POOLS
from axio_context_sqlite.store.runner import SQLiteRunner

PAST = 1_000  # ms since the epoch: long expired
LIST = "SELECT key, content_type FROM memory_blob_keys WHERE key >= ? AND key < ? ORDER BY key LIMIT 50"
LIVE = " AND (expires_at IS NULL OR expires_at > ?)"


def _rows(n: int, expired: bool) -> list[tuple[str, bytes, bytes, int | None]]:
    tag = "x" if expired else "k"
    out = []
    for i in range(n):
        data = f"{tag}{i}".encode()
        out.append((f"{tag}/{i:07d}", hashlib.sha256(data).digest(), data, PAST if expired else None))
    return out


async def _median_us(n: int, op: Callable[[int], Awaitable[Any]]) -> float:
    samples = []
    for i in range(n):
        t = time.perf_counter()
        await op(i)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


def _fill(d: Dialect, rows: list[tuple[str, bytes, bytes, int | None]], pieces: bool) -> Plan[None]:
    """Write the keys (with their bytes) and the boards (one task each) in one transaction."""
    if pieces:  # PostgreSQL keeps the bytes in pieces
        yield ExecuteMany(
            "INSERT INTO memory_blob_data (hash, size) VALUES (?, ?)", [(h, len(b)) for _, h, b, _ in rows]
        )
        yield ExecuteMany(
            "INSERT INTO memory_blob_pieces (hash, seq, data) VALUES (?, 0, ?)",
            [(h, b) for _, h, b, _ in rows],
        )
        keys = "INSERT INTO memory_blob_keys (key, hash, content_type, created_at, ttl_ms, expires_at)"
        yield ExecuteMany(f"{keys} VALUES (?, ?, 'text/plain', 0, 1, ?)", [(k, h, e) for k, h, _, e in rows])
    else:
        yield ExecuteMany(
            "INSERT INTO blobs (hash, refs, data) VALUES (?, 1, ?)", [(h, b) for _, h, b, _ in rows]
        )
        keys = "INSERT INTO memory_blob_keys (key, hash, size, content_type, created_at, ttl_ms, expires_at)"
        yield ExecuteMany(
            f"{keys} VALUES (?, ?, ?, 'text/plain', 0, 1, ?)", [(k, h, len(b), e) for k, h, b, e in rows]
        )
    yield ExecuteMany(
        "INSERT INTO task_lists (id, conversation_id, max_retries, created_at, updated_at,"
        " ttl_ms, expires_at) VALUES (?, ?, 3, 0, 0, 1, ?)",
        [(k, k, e) for k, _, _, e in rows],
    )
    yield ExecuteMany(
        "INSERT INTO tasks (list_id, id, title, status, ord) VALUES (?, 't', 'a task', 'planned', 0)",
        [(k,) for k, _, _, _ in rows],
    )


def _fill_pool(d: Dialect, p: PoolSQL, cid: int, items: int) -> Plan[None]:
    """``items`` expired and ``items`` live entries of pool ``cid``, each its own key, in one
    transaction (seq from 1, a new key's ord its seq, as the pool's log holds them)."""
    yield ExecuteMany(
        "INSERT INTO context_pool_entries (seq, owner, key, ord, description, content, ttl_ms, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                n,
                cid,
                f"i{n}",
                n,
                f"item {n}",
                b"\xa1x",
                1 if n <= items else None,
                PAST if n <= items else None,
            )
            for n in range(1, 2 * items + 1)
        ],
    )
    yield ExecuteMany("UPDATE context_pools SET size = ? WHERE id = ?", [(2 * items, cid)])
    yield from p.advance_log(2 * items)


async def _pool_sweep(runner: Runner, p: PoolSQL, cid: int, items: int) -> dict[str, float]:
    await runner.write(_fill_pool, p, cid, items)
    expiry = SQLPoolExpiry(runner, p)
    t = time.perf_counter()
    due = await expiry.count_expired()
    counted = time.perf_counter() - t
    t = time.perf_counter()
    gone = await expiry.sweep_expired()
    swept = time.perf_counter() - t
    return {"pool_due": due, "pool_count_ms": counted * 1e3, "pool_swept": gone, "pool_sweep_s": swept}


def _raw(d: Dialect, sql: str, args: tuple[Any, ...]) -> Plan[Any]:
    return (yield Rows(sql, args))


async def _sweep(blobs: SQLBlobStore, tasks: SQLTaskStore) -> dict[str, float]:
    t = time.perf_counter()
    due = await blobs.count_expired() + await tasks.count_expired()
    counted = time.perf_counter() - t
    t = time.perf_counter()
    gone_blobs = await blobs.sweep_expired()
    blob_s = time.perf_counter() - t
    t = time.perf_counter()
    gone_boards = await tasks.sweep_expired()
    board_s = time.perf_counter() - t
    return {
        "due": due,
        "count_ms": counted * 1e3,
        "blobs_swept": gone_blobs,
        "blob_sweep_s": blob_s,
        "boards_swept": gone_boards,
        "board_sweep_s": board_s,
    }


async def _reads(blobs: SQLBlobStore, runner: Runner, stat: Any, n: int, items: int) -> dict[str, float]:
    def key(i: int) -> str:
        return f"k/{(i * 7919) % items:07d}"

    def prefix(i: int) -> str:
        return key(i)[:6]

    now = int(time.time() * 1000)
    live_list = LIST.replace(" ORDER BY", LIVE + " ORDER BY")
    return {
        "list_store_us": await _median_us(n, lambda i: blobs.list_keys(prefix(i), limit=50)),
        "list_raw_us": await _median_us(n, lambda i: runner.read(_raw, LIST, (prefix(i), prefix(i) + "~"))),
        "list_raw_live_us": await _median_us(
            n, lambda i: runner.read(_raw, live_list, (prefix(i), prefix(i) + "~", now))
        ),
        "stat_store_us": await _median_us(n, lambda i: blobs.stat(key(i))),
        "stat_unfiltered_us": await _median_us(n, lambda i: runner.read(stat, key(i))),
    }


async def _measure(
    runner: Runner,
    blobs: SQLBlobStore,
    tasks: SQLTaskStore,
    stat: Any,
    pools: PoolSQL,
    open_pool: Callable[[], Awaitable[Any]],
    items: int,
    reads: int,
    pools_only: bool,
    pieces: bool,
) -> dict[str, float]:
    """One backend's figures: the blob and task stores' (unless ``pools_only``), then the pools'."""
    out: dict[str, float] = {}
    if not pools_only:
        await runner.write(_fill, _rows(items, True) + _rows(items, False), pieces)
        out = await _sweep(blobs, tasks)
        out.update(await _reads(blobs, runner, stat, reads, items))
    out.update(await _pool_sweep(runner, pools, (await open_pool())._header.id, items))
    assert len(await open_pool()) == items  # the live ones
    return out


async def run_sqlite(items: int, reads: int, tmp: Path, pools_only: bool = False) -> dict[str, float]:
    async with sqlite_connect(tmp / "expiry.db") as conn:
        return await _measure(
            SQLiteRunner(conn),
            SQLiteBlobStore(conn),
            SQLiteTaskStore(conn),
            SQLITE_BLOBS.stat,
            SQLITE_POOLS,
            lambda: SQLiteContextPool.open(conn, "bench"),
            items,
            reads,
            pools_only,
            False,
        )


async def run_postgres(items: int, reads: int, pools_only: bool = False) -> dict[str, float]:
    with EmbeddedServer() as server:
        pool = await pg_connect(server.url(), min_size=2, max_size=4)
        try:
            return await _measure(
                PostgresRunner(pool, "bench"),
                PostgresBlobStore(pool),
                PostgresTaskStore(pool),
                PG_BLOBS.stat,
                POSTGRES_POOLS,
                lambda: PostgresContextPool.open(pool, "bench"),
                items,
                reads,
                pools_only,
                True,
            )
        finally:
            await pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=2_000)
    parser.add_argument("--pools-only", action="store_true", help="only the context pool items' sweep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, result in (
            ("sqlite", asyncio.run(run_sqlite(args.items, args.reads, Path(tmp), args.pools_only))),
            ("postgresql", asyncio.run(run_postgres(args.items, args.reads, args.pools_only))),
        ):
            print(name, {k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()})


if __name__ == "__main__":
    main()
