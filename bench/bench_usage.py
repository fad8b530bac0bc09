"""Issue 19's usage benchmark: aggregates over 1M usage rows, limit checks, and recording cost.

- **aggregate**: ``--rows`` usage rows (default 1,000,000) over 90 days, 10,000 sessions (in 20
  projects), 50 agents, one run per 10 requests, 8 models. Each ``aggregate(by)`` (session,
  agent, run, model, project, day; all time, and since a time inside a day 30 days back) against
  plain sqlite3's ``GROUP BY`` over the same rows (the raw limit of answering from the rows), and
  ``totals`` of one session / one agent (what a UsageGuard reads before each request) against
  plain sqlite3's ``SUM`` by the same index / by a scan. The rows are bulk-loaded and the rollups
  built with one ``INSERT ... SELECT ... GROUP BY`` per dimension (what recording them one by one
  would leave, checked: each aggregate's totals equal plain sqlite3's).
- **record**: ``--record`` requests (default 2,000) recorded one by one through the API, alone
  and with their message, against plain sqlite3 inserting the same row in autocommit.

Run: ``python -m bench.bench_usage`` (``--rows 100000`` for a quicker run). Prints a table and,
with ``--json FILE``, writes the figures. Ratios are of medians, in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from axio_context.usage_limits import GROUPS, RequestUsage
from axio_context.usage_limits.sql import COLUMN_OF as DIMENSIONS
from axio_context.usage_limits.stored import ALL_TIME, COLUMNS
from axio_context_sqlite import connect
from axio_context_sqlite.usage import SQLiteUsageRecorder

DAY_MS = 86_400_000
END = datetime(2026, 6, 30, tzinfo=UTC)
START_MS = int((END - timedelta(days=90)).timestamp() * 1000)
_SUMS = ", ".join(f"sum({c})" for c in (*COLUMNS, "audio_seconds"))


def _median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


async def _times(call: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        out.append(time.perf_counter() - start)
    return out


def _raw_times(call: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def load(db: Path, rows: int) -> None:
    """Bulk-load ``rows`` usage rows and build their rollups (plain sqlite3, one transaction)."""
    rng = random.Random(19)
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA journal_mode=WAL")
    span = 90 * DAY_MS
    cols = ", ".join(COLUMNS)
    sql = (
        f"INSERT INTO usage_records (at, session, agent, run, model, project, {cols}, audio_seconds, cost)"
        f" VALUES ({', '.join('?' * (len(COLUMNS) + 8))})"
    )

    def batch(start: int, stop: int) -> list[tuple[Any, ...]]:
        out = []
        for i in range(start, stop):
            s = rng.randrange(10_000)
            inp, outp = rng.randrange(100, 20_000), rng.randrange(10, 2_000)
            counts = [1, rng.randrange(3), inp, 0, 0, inp // 3, outp, 0, outp // 4, 0, 0, 0]
            cost = f"{inp * 0.0000025 + outp * 0.00001:.7f}"
            out.append(
                (
                    START_MS + i * span // rows,
                    f"s{s}",
                    f"agent{s % 50}",
                    f"run{i // 10}",
                    f"model{i % 8}",
                    f"/p/{s % 20}",
                    *counts,
                    0.0,
                    cost,
                )
            )
        return out

    with raw:
        for start in range(0, rows, 100_000):
            raw.executemany(sql, batch(start, min(rows, start + 100_000)))
        sums: dict[tuple[str, str, int], float] = {}
        for dim, column in DIMENSIONS.items():
            for day, group in ((f"at / {DAY_MS}", f"{column}, at / {DAY_MS}"), (str(ALL_TIME), column)):
                raw.execute(
                    f"INSERT INTO usage_rollups (dim, key, day, {cols}, audio_seconds, first_at, last_at)"
                    f" SELECT ?, {column}, {day}, {_SUMS}, min(at), max(at) FROM usage_records"
                    f" GROUP BY {group}",
                    (dim,),
                )
                # Exact costs per rollup row, as recording merges them (decimal text).
                for key, d, cost in raw.execute(
                    f"SELECT {column}, {day}, sum(CAST(cost AS REAL)) FROM usage_records GROUP BY {group}"
                ):
                    sums[(dim, key, d)] = cost
        raw.executemany(
            "UPDATE usage_rollups SET cost = ? WHERE dim = ? AND key = ? AND day = ?",
            [(f"{c:.7f}", d, k, day) for (d, k, day), c in sums.items()],
        )
    raw.close()


async def bench_aggregate(db: Path, rows: int, repeat: int) -> dict[str, Any]:
    raw = sqlite3.connect(db)
    since = END - timedelta(days=30, hours=7)
    since_ms = int(since.timestamp() * 1000)
    figures: dict[str, Any] = {}
    async with connect(db) as conn:
        recorder = SQLiteUsageRecorder(conn, "/p/0")
        for by in GROUPS:
            column = f"at / {DAY_MS}" if by == "day" else DIMENSIONS[by]
            for label, after, where in (("all", None, ""), ("since", since, f" WHERE at >= {since_ms}")):
                ours = await _times(lambda by=by, after=after: recorder.aggregate(by, since=after), repeat)
                got = await recorder.aggregate(by, since=after)  # type: ignore[arg-type]
                sql = (  # the same figures: every count, audio seconds and the cost
                    f"SELECT {column}, sum(input_tokens), {_SUMS}, sum(CAST(cost AS REAL))"
                    f" FROM usage_records{where} GROUP BY {column}"
                )
                plain = _raw_times(lambda sql=sql: raw.execute(sql).fetchall(), max(1, repeat // 5))
                expect = raw.execute(sql).fetchall()
                assert len(got) == len(expect) and sum(t.usage.input_tokens for t in got) == sum(
                    r[1] for r in expect
                ), (by, label)
                figures[f"aggregate by {by} ({label})"] = {
                    "groups": len(got),
                    "ours_us": _median_us(ours),
                    "sqlite3_groupby_us": _median_us(plain),
                    "ratio": round(statistics.median(plain) / statistics.median(ours), 1),
                }
        for label, filters, sql, arg in (
            ("totals of one session", {"session_id": "s4242"}, "session = ?", "s4242"),
            ("totals of one agent", {"agent": "agent7"}, "agent = ?", "agent7"),
        ):
            ours = await _times(lambda f=filters: recorder.totals(**f), repeat)
            query = f"SELECT {_SUMS} FROM usage_records WHERE {sql}"
            plain = _raw_times(lambda q=query, a=arg: raw.execute(q, (a,)).fetchone(), max(1, repeat // 5))
            assert (await recorder.totals(**filters)).input_tokens == raw.execute(query, (arg,)).fetchone()[2]
            figures[label] = {
                "ours_us": _median_us(ours),
                "sqlite3_sum_us": _median_us(plain),
                "ratio": round(statistics.median(plain) / statistics.median(ours), 1),
            }
    raw.close()
    figures["rows"] = rows
    return figures


async def bench_record(tmp: Path, n: int) -> dict[str, Any]:
    db = tmp / "record.db"
    reply = Message(role="assistant", content=[TextBlock(text="a short answer of a few words " * 4)])
    async with connect(db) as conn:
        recorder = SQLiteUsageRecorder(conn, "/p")
        usage = RequestUsage(input_tokens=1200, output_tokens=80, cache_read_tokens=400)
        i = iter(range(10 * n))
        alone = await _times(
            lambda: recorder.record(usage, session_id=f"s{next(i) % 50}", agent="a", model="m"), n
        )
        with_message = await _times(
            lambda: recorder.record(
                usage, session_id=f"s{next(i) % 50}", agent="a", model="m", message=reply
            ),
            n,
        )
    raw = sqlite3.connect(tmp / "raw.db", isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=NORMAL")
    raw.execute(
        "CREATE TABLE u (id INTEGER PRIMARY KEY, at INTEGER, session TEXT, agent TEXT, model TEXT,"
        " input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER)"
    )
    raw.execute("CREATE INDEX u_by_session ON u (session, at)")
    plain = _raw_times(
        lambda: raw.execute(
            "INSERT INTO u (at, session, agent, model, input_tokens, output_tokens, cache_read_tokens)"
            " VALUES (?, ?, 'a', 'm', 1200, 80, 400)",
            (time.time_ns() // 1_000_000, f"s{next(i) % 50}"),
        ),
        n,
    )
    raw.close()
    return {
        "record_us": _median_us(alone),
        "record_with_message_us": _median_us(with_message),
        "sqlite3_insert_us": _median_us(plain),
        "record / sqlite3 insert": round(statistics.median(alone) / statistics.median(plain), 1),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--record", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "usage.db"
        async with connect(db):
            pass  # the schema
        start = time.perf_counter()
        load(db, args.rows)
        print(f"loaded {args.rows:,} usage rows and their rollups in {time.perf_counter() - start:.1f} s")
        figures = {"aggregate": await bench_aggregate(db, args.rows, args.repeat)}
        figures["record"] = await bench_record(Path(tmp), args.record)
    for name, row in figures["aggregate"].items():
        if isinstance(row, dict):
            print(f"{name:38} " + "  ".join(f"{k}={v}" for k, v in row.items()))
    print("record: " + "  ".join(f"{k}={v}" for k, v in figures["record"].items()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
