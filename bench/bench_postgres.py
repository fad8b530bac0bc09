"""PostgreSQL backend vs SQLite backend vs the raw drivers, in one run on one machine.

``python -m bench.bench_postgres [--messages 100000] [--dim 384]`` starts an embedded PostgreSQL
(``axio_context_postgres.embedded``: fsync off, as in the tests; a production server with fsync
pays one WAL flush per commit on top), then measures:

- **driver**: asyncpg vs psycopg 3 (async, with psycopg_pool) for our access pattern: append one
  message in a transaction that bumps the session row, and SELECT 10k rows of ~1 KB payloads.
- **store**: SQLite store vs PostgreSQL store vs the raw asyncpg INSERT/SELECT (the limit):
  append, load 10k, the tail of 20 of those 10k, list 2k sessions (a page of 50 and all), fork.
- **search**: keyword, semantic (HNSW and exact) and hybrid at ``--messages`` x ``--dim``, on the
  same realistic messages in both backends, each embedded by its own ``reindex`` (hashing
  embedder), with PostgreSQL's raw SQL as the limit. HNSW recall and its tuning are
  ``bench.bench_postgres_recall``'s.
- **writers**: appends per second with 1, 4 and 8 writer processes, SQLite vs PostgreSQL.

Needs the dev extra plus ``pip install 'psycopg[binary,pool]'`` for the driver comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from axio_context.embeddings import HashingEmbedder
from axio_context.testing import text

ROOT = Path(__file__).resolve().parent.parent


def _cell(v: float | None) -> str:
    return f"{'':>9s}" if v is None else f"{v:9.1f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return _median(out)


# -- drivers --------------------------------------------------------------------------------------

DRIVER_SETUP = """
DROP TABLE IF EXISTS b_msg, b_sess;
CREATE TABLE b_sess (id text PRIMARY KEY, n integer NOT NULL);
CREATE TABLE b_msg (sid text, pos integer, payload bytea, PRIMARY KEY (sid, pos));
INSERT INTO b_sess VALUES ('s', 0), ('big', 0);
"""


async def bench_drivers(url: str, n_append: int) -> dict[str, float]:
    import asyncpg

    out: dict[str, float] = {}
    payload = os.urandom(1000)
    conn = await asyncpg.connect(url)
    await conn.execute(DRIVER_SETUP)
    await conn.executemany("INSERT INTO b_msg VALUES ('big', $1, $2)", [(i, payload) for i in range(10_000)])
    pool = await asyncpg.create_pool(url, min_size=1, max_size=2)

    async def apg_append() -> None:
        async with pool.acquire() as c, c.transaction():
            pos = await c.fetchval("UPDATE b_sess SET n = n + 1 WHERE id = 's' RETURNING n - 1")
            await c.execute("INSERT INTO b_msg VALUES ('s', $1, $2)", pos, payload)

    async def apg_load() -> None:
        await pool.fetch("SELECT pos, payload FROM b_msg WHERE sid = 'big' ORDER BY pos")

    out["asyncpg append (tx + session bump)"] = await timed(apg_append, n_append)
    out["asyncpg load 10k x 1 KB"] = await timed(apg_load, 15)
    await pool.close()
    try:
        from psycopg_pool import AsyncConnectionPool
    except ImportError:
        await conn.close()
        return out
    import psycopg

    conninfo = psycopg.conninfo.make_conninfo(url)
    ppool = AsyncConnectionPool(conninfo, min_size=1, max_size=2, open=False)
    await ppool.open()

    async def pg3_append() -> None:
        async with ppool.connection() as c, c.transaction():
            cur = await c.execute("UPDATE b_sess SET n = n + 1 WHERE id = 's' RETURNING n - 1")
            row = await cur.fetchone()
            assert row is not None
            await c.execute("INSERT INTO b_msg VALUES ('s', %s, %s)", (row[0], payload))

    async def pg3_load() -> None:
        async with ppool.connection() as c:
            cur = c.cursor(binary=True)
            await cur.execute("SELECT pos, payload FROM b_msg WHERE sid = 'big' ORDER BY pos")
            await cur.fetchall()

    out["psycopg3 append (tx + session bump)"] = await timed(pg3_append, n_append)
    out["psycopg3 load 10k x 1 KB"] = await timed(pg3_load, 15)
    await ppool.close()
    await conn.execute("DROP TABLE b_msg, b_sess")
    await conn.close()
    return out


# -- stores ---------------------------------------------------------------------------------------


async def bench_stores(url: str, tmp: Path, n_append: int) -> dict[str, dict[str, float]]:
    from axio_context_postgres import PostgresContextStore, connect
    from axio_context_sqlite import SQLiteContextStore
    from axio_context_sqlite import connect as sqlite_connect

    msgs = [
        text("user" if i % 2 == 0 else "assistant", f"message {i} " + "lorem ipsum " * 60)
        for i in range(10_000)
    ]
    res: dict[str, dict[str, float]] = {"sqlite": {}, "postgres": {}}
    pool = await connect(url, min_size=1, max_size=4)
    async with sqlite_connect(tmp / "bench.db") as sconn:
        stores: dict[str, Callable[[str], Any]] = {
            "sqlite": lambda sid: SQLiteContextStore(sconn, sid, project="bench"),
            "postgres": lambda sid: PostgresContextStore(pool, sid, project="bench"),
        }
        for name, make in stores.items():
            r = res[name]
            one = make("append")
            r["append"] = await timed(lambda one=one: one.append(text("user", "hello " * 100)), n_append)
            big = make("big")
            for i in range(0, len(msgs), 1000):
                await big.append_many(msgs[i : i + 1000])
            r["load 10k"] = await timed(big.get_history, 10)
            r["tail 20 (of 10k)"] = await timed(lambda big=big: big.get_history(limit=20), 50)
            r["fork (10k history)"] = await timed(big.fork, 50)
            for k in range(2000):
                await make(f"list-{k}").append(text("user", f"session {k}"))
            if name == "postgres":  # what autovacuum does a minute after 2,000 new sessions
                await pool.execute("ANALYZE sessions")
            lister = make("list-0")
            r["list 2k: page of 50"] = await timed(lambda lister=lister: lister.list_sessions_page(50), 30)
            r["list 2k: all"] = await timed(lister.list_sessions, 5)
    await pool.close()
    # The limit: raw asyncpg doing the same INSERT / SELECT (bench.peers_postgres alternates them
    # with the store's calls).
    import asyncpg

    from .peers_postgres import ROUNDS, raw_side

    conn = await asyncpg.connect(url)
    calls = await raw_side(conn)
    rounds = {**ROUNDS, "append": n_append}
    raw = {work: await timed(fn, rounds[work]) for work, fn in calls.items()}
    await conn.execute("DROP TABLE raw_msg, raw_sess")
    await conn.close()
    res["raw asyncpg"] = raw
    return res


# -- search ---------------------------------------------------------------------------------------


async def bench_search(url: str, tmp: Path, n: int, dim: int) -> dict[str, dict[str, float]]:
    """Keyword and semantic search over the same ``n`` realistic messages (bench_postgres_recall's
    corpus) in both backends, each embedded by its own ``reindex`` with the hashing embedder, and
    the raw SQL of each PostgreSQL search (no snippet, no session lookup) as the limit."""
    from axio_context_postgres import PostgresContextStore, connect
    from axio_context_postgres.database import PostgresDatabase
    from axio_context_postgres.search import EF_SEARCH
    from axio_context_sqlite import SQLiteContextStore, open_database
    from bench.bench_postgres_recall import corpus

    texts, queries = corpus(n)
    queries = queries[:20]
    emb = HashingEmbedder(dim)
    per = 1000
    res: dict[str, dict[str, float]] = {"sqlite": {}, "postgres": {}, "raw asyncpg": {}}

    async def each_query(search: Callable[[str], Awaitable[Any]]) -> float:
        took = []
        for q in queries:
            t = time.perf_counter()
            await search(q)
            took.append(time.perf_counter() - t)
        return _median(took)

    pool = await connect(url, min_size=1, max_size=4)
    db = PostgresDatabase(pool, url)
    async with open_database(tmp / "search.db") as sdb:
        makers: dict[str, Any] = {
            "sqlite": (sdb, lambda sid: SQLiteContextStore(sdb.connection, sid, project="bench")),
            "postgres": (db, lambda sid: PostgresContextStore(pool, sid, project="bench")),
        }
        for name, (d, make) in makers.items():
            r = res[name]
            t = time.perf_counter()
            for s in range(n // per):
                batch = [text("user", x) for x in texts[s * per : (s + 1) * per]]
                await make(f"search-{s}").append_many(batch)
            r[f"fill {n:,} messages (s)"] = time.perf_counter() - t
            t = time.perf_counter()
            await d.reindex(emb)
            r[f"reindex {n:,} x {dim}, hashing (s)"] = time.perf_counter() - t
            if name == "postgres":  # what autovacuum does a minute after a bulk load
                await pool.execute("VACUUM (ANALYZE) messages")
            r["keyword search, k=10 (ms)"] = 1e3 * await each_query(
                lambda q, d=d: d.search(q, mode="keyword", k=10)
            )
            r["semantic search, k=10 (ms)"] = 1e3 * await each_query(
                lambda q, d=d: d.search(q, mode="semantic", k=10, embedder=emb)
            )
            r["hybrid search, k=10 (ms)"] = 1e3 * await each_query(
                lambda q, d=d: d.search(q, mode="hybrid", k=10, embedder=emb)
            )
    raw = res["raw asyncpg"]
    async with pool.acquire() as c:
        raw["keyword search, k=10 (ms)"] = 1e3 * await each_query(
            lambda q: c.fetch(
                "SELECT seg, position FROM messages, websearch_to_tsquery('simple', $1) q WHERE tsv @@ q"
                " ORDER BY ts_rank_cd(tsv, q) DESC LIMIT 10",
                q,
            )
        )
        vectors = {q: np.asarray((await emb.embed([q]))[0], dtype=np.float32) for q in queries}

        async def knn(q: str, exact: bool) -> Any:
            async with c.transaction():
                await c.execute(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
                # "+ 0" keeps the planner off the index: an exact scan whatever it would choose
                order = "(embedding <=> $1) + 0" if exact else "embedding <=> $1"
                sql = f"SELECT seg, position FROM embeddings ORDER BY {order} LIMIT 10"
                return await c.fetch(sql, vectors[q])

        raw["semantic search, k=10 (ms)"] = 1e3 * await each_query(lambda q: knn(q, False))
        res["postgres"]["semantic, exact scan (ms)"] = 1e3 * await each_query(lambda q: knn(q, True))
    await pool.close()
    return res


# -- writer processes -----------------------------------------------------------------------------

WRITER = """
import asyncio, sys, time
from axio_context.testing import text
async def main(kind, where, w, n, start_at):
    if kind == "postgres":
        from axio_context_postgres import PostgresContextStore, connect
        pool = await connect(where, min_size=1, max_size=1)
        store = PostgresContextStore(pool, f"w{w}", project="mp")
    else:
        from axio_context_sqlite import SQLiteContextStore, connect
        conn = await connect(where, busy_timeout=60)
        store = SQLiteContextStore(conn, f"w{w}", project="mp")
    await store.append(text("user", "first"))  # the session exists before the clock starts
    await asyncio.sleep(max(0.0, start_at - time.time()))
    for i in range(n):
        await store.append(text("user", f"writer {w} message {i} " + "x" * 200))
    print(time.time())
    if kind == "postgres":
        await pool.close()
    else:
        await conn.close()
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])))
"""


def bench_writers(url: str, tmp: Path, n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for kind in ("sqlite", "postgres"):
        for procs in (1, 4, 8):
            where = url if kind == "postgres" else str(tmp / f"mp-{procs}.db")
            start_at = time.time() + 5  # every process imported and connected by then
            ps = [
                subprocess.Popen(
                    [sys.executable, "-c", WRITER, kind, where, str(w), str(n), str(start_at)],
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for w in range(procs)
            ]
            ends = [float(p.communicate()[0].split()[-1]) for p in ps]
            assert all(p.returncode == 0 for p in ps)
            out[f"{kind}: {procs} writer(s), appends/s"] = procs * n / (max(ends) - start_at)
    return out


async def amain(args: argparse.Namespace) -> None:
    from axio_context_postgres.embedded import EmbeddedServer

    with EmbeddedServer() as server, tempfile.TemporaryDirectory() as d:
        import asyncpg

        admin = await asyncpg.connect(server.url())
        await admin.execute("CREATE DATABASE bench")
        await admin.close()
        url = server.url("bench")
        tmp = Path(d)
        print(f"# bench_postgres: {args.messages} messages x {args.dim}, python {sys.version.split()[0]}")
        parts = set(args.parts)
        if "drivers" in parts:
            print("\n## drivers (median, us)")
            for k, v in (await bench_drivers(url, args.appends)).items():
                print(f"{k:45s} {v * 1e6:10.0f} us")
        if "stores" in parts:
            _print_stores(await bench_stores(url, tmp, args.appends))
        if "search" in parts:
            _print_search(await bench_search(url, tmp, args.messages, args.dim), args)
        if "writers" in parts:
            _print_writers(bench_writers(url, tmp, args.writer_appends))


def _print_stores(stores: dict[str, dict[str, float]]) -> None:
    print("\n## stores (median, us)")
    head = f"{'sqlite':>10s} {'postgres':>10s} {'raw asyncpg':>12s} {'pg/sqlite':>10s} {'pg/raw':>7s}"
    print(f"{'':25s} {head}")
    for k in stores["sqlite"]:
        sq, pg, raw = stores["sqlite"][k], stores["postgres"][k], stores["raw asyncpg"].get(k)
        print(
            f"{k:25s} {sq * 1e6:10.0f} {pg * 1e6:10.0f}"
            f" {'' if raw is None else f'{raw * 1e6:12.0f}'} {_ratio(pg, sq):>10s} {_ratio(pg, raw):>7s}"
        )


def _print_search(search: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    print(f"\n## search, {args.messages:,} messages x {args.dim} (median of 20 queries)")
    print(f"{'':36s} {'sqlite':>9s} {'postgres':>9s} {'raw':>9s} {'pg/sqlite':>10s} {'pg/raw':>7s}")
    for k in search["postgres"]:
        sq, pg, raw = (search[b].get(k) for b in ("sqlite", "postgres", "raw asyncpg"))
        print(f"{k:36s} {_cell(sq)} {_cell(pg)} {_cell(raw)} {_ratio(pg, sq):>10s} {_ratio(pg, raw):>7s}")


def _print_writers(writers: dict[str, float]) -> None:
    print("\n## writer processes (appends/s, each its own session)")
    print(f"{'writers':>8s} {'sqlite':>9s} {'postgres':>9s} {'pg/sqlite':>10s}")
    for procs in (1, 4, 8):
        sq = writers[f"sqlite: {procs} writer(s), appends/s"]
        pg = writers[f"postgres: {procs} writer(s), appends/s"]
        print(f"{procs:8d} {sq:9.0f} {pg:9.0f} {_ratio(pg, sq):>10s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--writer-appends", type=int, default=500)
    parser.add_argument(
        "--parts", nargs="*", default=["drivers", "stores", "search", "writers"], help="what to run"
    )
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
