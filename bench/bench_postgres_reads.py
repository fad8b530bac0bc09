"""Reading a session on PostgreSQL at 100k messages: the store's reads against the raw driver
and the SQLite store, and the plan of the read before and after ``CROSS JOIN LATERAL``.

``python -m bench.bench_postgres_reads [--messages 100000] [--sessions 10]`` starts an embedded
PostgreSQL (fsync off), fills ``--sessions`` sessions of ``--messages / --sessions`` messages
(~0.8 KB each) in both backends, forks one of them and appends to the fork, then measures, as
medians in one run:

- **tail 20**: ``get_history(limit=20)`` of a session and of the fork (two segments);
- **load 10k**: ``get_history()`` of a whole session;
- **tokens**: the estimated tokens of the first half of a transcript (what a checkpoint reads);

for the SQLite store, the PostgreSQL store, the read as it was (one join over the chain,
which the planner may make a hash join over the whole messages table) and raw asyncpg
(``WHERE sid = $1 ORDER BY pos DESC LIMIT 20`` on a plain table: the limit). It ends with the
``EXPLAIN (ANALYZE)`` summary of the tail read both ways.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from axio_context.testing import text

#: The store's read before the LATERAL form (kept here to measure what it cost).
OLD_READ = """
WITH RECURSIVE chain(seg, base_seg, lo, hi) AS (
    SELECT g.seg, g.base_seg, g.base_len, $2::integer FROM segments g WHERE g.seg = $1
    UNION ALL
    SELECT g.seg, g.base_seg, g.base_len, LEAST(c.lo, c.hi) FROM chain c JOIN segments g ON g.seg = c.base_seg
)
SELECT m.position, m.role, m.created_at, m.payload, m.tokens
FROM chain c JOIN messages m ON m.seg = c.seg
    AND m.position >= GREATEST(c.lo, $3::integer) AND m.position < LEAST(c.hi, $4::integer)
ORDER BY m.position
"""
OLD_TOKENS = OLD_READ.split("SELECT m.position")[0] + (
    "SELECT COALESCE(SUM(m.tokens), 0) FROM chain c JOIN messages m ON m.seg = c.seg"
    " AND m.position >= c.lo AND m.position < c.hi"
)


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    """Median seconds of ``repeat`` calls (after one warm-up call)."""
    await fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def _messages(n: int, tag: int) -> list[Any]:
    return [
        text("user" if i % 2 == 0 else "assistant", f"s{tag} m{i} " + "lorem ipsum " * 60) for i in range(n)
    ]


async def bench(
    url: str, tmp: Path, total: int, n_sessions: int
) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    import asyncpg

    from axio_context_postgres import PostgresContextStore, connect, lineage
    from axio_context_sqlite import SQLiteContextStore
    from axio_context_sqlite import connect as sqlite_connect

    per = total // n_sessions
    res: dict[str, dict[str, float]] = {}
    pool = await connect(url, min_size=1, max_size=2)
    async with sqlite_connect(tmp / "reads.db") as sconn:
        makers: dict[str, Callable[[str], Any]] = {
            "sqlite": lambda sid: SQLiteContextStore(sconn, sid, project="bench"),
            "postgres": lambda sid: PostgresContextStore(pool, sid, project="bench"),
        }
        for name, make in makers.items():
            for k in range(n_sessions):
                msgs = _messages(per, k)
                for i in range(0, per, 1000):
                    await make(f"s{k}").append_many(msgs[i : i + 1000])
            fork = await make("s0").fork()
            await fork.append_many(_messages(50, 99))
            big = make("s0")
            r = res[name] = {}
            r["tail 20"] = await timed(lambda big=big: big.get_history(limit=20), 50)
            r["tail 20 of a fork"] = await timed(lambda fork=fork: fork.get_history(limit=20), 50)
            r[f"load {per // 1000}k"] = await timed(big.get_history, 10)
        await pool.execute("VACUUM (ANALYZE) messages")
        row = await pool.fetchrow("SELECT seg, next_position FROM sessions WHERE id = 's0'")
        seg, n = int(row[0]), int(row[1])
        fork_row = await pool.fetchrow(
            "SELECT seg, next_position FROM sessions WHERE parent_id = 's0' ORDER BY sid LIMIT 1"
        )
        old: dict[str, float] = {}
        old["tail 20"] = await timed(lambda: pool.fetch(OLD_READ, seg, n, n - 20, n), 50)
        old["tail 20 of a fork"] = await timed(
            lambda: pool.fetch(OLD_READ, fork_row[0], fork_row[1], fork_row[1] - 20, fork_row[1]), 50
        )
        old[f"load {per // 1000}k"] = await timed(lambda: pool.fetch(OLD_READ, seg, n, 0, n), 10)
        old["tokens of half"] = await timed(lambda: pool.fetchval(OLD_TOKENS, seg, n // 2), 20)
        res["postgres"]["tokens of half"] = await timed(lambda: _tokens(pool, seg, n // 2), 20)
        res["postgres, join (before)"] = old
        plans: dict[str, str] = {}
        async with pool.acquire() as conn:
            for label, sql in (("before (join)", OLD_READ), ("after (LATERAL)", lineage.READ)):
                plan = await conn.fetch("EXPLAIN (ANALYZE, COSTS OFF) " + sql, seg, n, n - 20, n)
                lines = [p[0] for p in plan]
                whole = any("Seq Scan on messages" in x for x in lines)
                shape = "reads the whole messages table" if whole else "one index range per segment"
                plans[label] = f"{shape}; {lines[-1].strip()}"
    await pool.close()
    conn = await asyncpg.connect(url)
    await conn.execute("CREATE TABLE raw_msg (sid text, pos integer, payload bytea, PRIMARY KEY (sid, pos))")
    payload = os.urandom(800)
    for k in range(n_sessions):
        await conn.executemany(
            "INSERT INTO raw_msg VALUES ($1, $2, $3)", [(f"s{k}", i, payload) for i in range(per)]
        )
    await conn.execute("VACUUM (ANALYZE) raw_msg")
    raw: dict[str, float] = {}
    raw["tail 20"] = await timed(
        lambda: conn.fetch("SELECT pos, payload FROM raw_msg WHERE sid = 's0' ORDER BY pos DESC LIMIT 20"), 50
    )
    raw[f"load {per // 1000}k"] = await timed(
        lambda: conn.fetch("SELECT pos, payload FROM raw_msg WHERE sid = 's0' ORDER BY pos"), 10
    )
    await conn.execute("DROP TABLE raw_msg")
    await conn.close()
    res["raw asyncpg"] = raw
    return res, plans


async def _tokens(pool: Any, seg: int, end: int) -> int:
    from axio_context_postgres import lineage

    async with pool.acquire() as conn:
        return await lineage.tokens_upto(conn, seg, end)


async def amain(args: argparse.Namespace) -> None:
    import asyncpg

    from axio_context_postgres.embedded import EmbeddedServer

    with EmbeddedServer() as server, tempfile.TemporaryDirectory() as d:
        admin = await asyncpg.connect(server.url())
        await admin.execute("CREATE DATABASE bench_reads")
        await admin.close()
        res, plans = await bench(server.url("bench_reads"), Path(d), args.messages, args.sessions)
    load = os.getloadavg()[0]
    print(f"# bench_postgres_reads: {args.messages:,} messages in {args.sessions} sessions; load {load:.2f}")
    cols = ["sqlite", "postgres", "postgres, join (before)", "raw asyncpg"]
    print(
        f"{'(median, us)':22s}" + "".join(f"{c:>25s}" for c in cols) + f"{'pg/raw':>8s}{'before/after':>14s}"
    )
    for key in res["postgres"]:
        cells = [res[c].get(key) for c in cols]
        pg, old, raw = (
            res["postgres"][key],
            res["postgres, join (before)"].get(key),
            res["raw asyncpg"].get(key),
        )
        ratio = f"{pg / raw:.1f}x" if raw else ""
        gain = f"{old / pg:.1f}x" if old else ""
        print(
            f"{key:22s}"
            + "".join(f"{'' if v is None else f'{v * 1e6:.0f}':>25s}" for v in cells)
            + f"{ratio:>8s}{gain:>14s}"
        )
    print("\nEXPLAIN (ANALYZE) of the tail read:")
    for label, summary in plans.items():
        print(f"  {label:18s} {summary}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=10)
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
