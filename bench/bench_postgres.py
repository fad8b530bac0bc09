"""PostgreSQL backend vs SQLite backend vs the raw drivers, in one run on one machine.

``python -m bench.bench_postgres [--messages 100000] [--dim 384]`` starts an embedded PostgreSQL
(``axio_context_postgres.embedded``: fsync off, as in the tests; a production server with fsync
pays one WAL flush per commit on top), then measures:

- **driver**: asyncpg vs psycopg 3 (async, with psycopg_pool) for our access pattern: append one
  message in a transaction that bumps the session row, and SELECT 10k rows of ~1 KB payloads.
- **store**: SQLite store vs PostgreSQL store vs the raw asyncpg INSERT/SELECT (the limit):
  append, load 10k, list 2k sessions (a page of 50 and all), fork.
- **search**: keyword and semantic (HNSW vs exact, recall@10) at ``--messages`` x ``--dim``.
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
            r["fork (10k history)"] = await timed(big.fork, 50)
            for k in range(2000):
                await make(f"list-{k}").append(text("user", f"session {k}"))
            lister = make("list-0")
            r["list 2k: page of 50"] = await timed(lambda lister=lister: lister.list_sessions_page(50), 30)
            r["list 2k: all"] = await timed(lister.list_sessions, 5)
    await pool.close()
    # The limit: raw asyncpg doing the same INSERT / SELECT.
    import asyncpg

    conn = await asyncpg.connect(url)
    payload = os.urandom(700)
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS raw_msg (sid text, pos integer, payload bytea, PRIMARY KEY (sid, pos))"
    )
    counter = iter(range(10**9))
    raw = {}
    raw["append"] = await timed(
        lambda: conn.execute("INSERT INTO raw_msg VALUES ('a', $1, $2)", next(counter), payload), n_append
    )
    await conn.executemany(
        "INSERT INTO raw_msg VALUES ('big', $1, $2)", [(i, payload) for i in range(10_000)]
    )
    raw["load 10k"] = await timed(
        lambda: conn.fetch("SELECT payload FROM raw_msg WHERE sid = 'big' ORDER BY pos"), 10
    )
    await conn.close()
    res["raw asyncpg"] = raw
    return res


# -- search ---------------------------------------------------------------------------------------

WORDS = ["lighthouse", "parser", "ocean", "bread", "compiler", "garden"]
WORDS += ["violin", "engine", "river", "mountain", "galaxy", "kernel"]


async def bench_search(url: str, tmp: Path, n: int, dim: int) -> dict[str, float]:
    from axio_context_postgres import PostgresContextStore, connect
    from axio_context_postgres.database import PostgresDatabase
    from axio_context_postgres.search import ensure_embeddings

    rng = np.random.default_rng(7)
    out: dict[str, float] = {}
    pool = await connect(url, min_size=1, max_size=4)
    db = PostgresDatabase(pool, url)
    per = 1000
    t = time.perf_counter()
    for s in range(n // per):
        store = PostgresContextStore(pool, f"search-{s}", project="bench")
        batch = [text("user", " ".join(rng.choice(WORDS, 12)) + f" item{s * per + i}") for i in range(per)]
        await store.append_many(batch)
    out[f"fill {n} messages (s)"] = time.perf_counter() - t
    # The same messages in SQLite, for its keyword search.
    from axio_context_sqlite import SQLiteContextStore, open_database

    rng2 = np.random.default_rng(7)
    async with open_database(tmp / "search.db") as sdb:
        for s in range(n // per):
            sstore = SQLiteContextStore(sdb.connection, f"search-{s}", project="bench")
            await sstore.append_many(
                [text("user", " ".join(rng2.choice(WORDS, 12)) + f" item{s * per + i}") for i in range(per)]
            )
        out["sqlite keyword search"] = await timed(
            lambda: sdb.search("lighthouse violin", mode="keyword", k=10), 20
        )
    async with pool.acquire() as c:
        await ensure_embeddings(c, "bench-random", dim)
        await c.execute("DROP INDEX IF EXISTS embeddings_hnsw")
        rows = await c.fetch("SELECT seg, position FROM messages")
        vecs = rng.standard_normal((len(rows), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        t = time.perf_counter()
        await c.copy_records_to_table(
            "embeddings",
            records=[(r[0], r[1], v) for r, v in zip(rows, vecs, strict=True)],
            columns=["seg", "position", "embedding"],
        )
        t = time.perf_counter()
        await c.execute("SET maintenance_work_mem = '512MB'")
        await c.execute("CREATE INDEX embeddings_hnsw ON embeddings USING hnsw (embedding vector_cosine_ops)")
        out[f"HNSW build {len(rows)} x {dim} (s)"] = time.perf_counter() - t
    out["postgres keyword search"] = await timed(
        lambda: db.search("lighthouse violin", mode="keyword", k=10), 20
    )

    class Fixed:
        model = "bench-random"
        dimension = dim

        def __init__(self) -> None:
            self.q = rng.standard_normal(dim).astype(np.float32)
            self.q /= np.linalg.norm(self.q)

        async def embed(self, texts: Any) -> list[list[float]]:
            return [self.q.tolist() for _ in texts]

    emb = Fixed()
    out["semantic search (HNSW, ef_search=200)"] = await timed(
        lambda: db.search("q", mode="semantic", embedder=emb), 20
    )
    # recall@10 against exact, over 20 queries
    recalls = []
    async with pool.acquire() as c:
        for _ in range(20):
            q = rng.standard_normal(dim).astype(np.float32)
            async with c.transaction():
                await c.execute("SET LOCAL hnsw.ef_search = 200")
                approx = {
                    tuple(r)
                    for r in await c.fetch(
                        "SELECT seg, position FROM embeddings ORDER BY embedding <=> $1 LIMIT 10", q
                    )
                }
            async with c.transaction():
                await c.execute("SET LOCAL enable_indexscan = off")
                exact = {
                    tuple(r)
                    for r in await c.fetch(
                        "SELECT seg, position FROM embeddings ORDER BY embedding <=> $1 LIMIT 10", q
                    )
                }
            recalls.append(len(approx & exact) / 10)
        t = time.perf_counter()
        async with c.transaction():
            await c.execute("SET LOCAL enable_indexscan = off")
            await c.fetch("SELECT seg, position FROM embeddings ORDER BY embedding <=> $1 LIMIT 10", q)
        out["semantic search exact scan"] = time.perf_counter() - t
    out["recall@10 HNSW vs exact"] = statistics.mean(recalls)
    await pool.close()
    _ = HashingEmbedder
    return out


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
        for title, figures in [
            ("drivers (median seconds)", await bench_drivers(url, args.appends)),
        ]:
            print(f"\n## {title}")
            for k, v in figures.items():
                print(f"{k:45s} {v * 1e6:10.0f} us")
        stores = await bench_stores(url, tmp, args.appends)
        print("\n## stores (median, us)")
        keys = list(stores["sqlite"])
        print(f"{'':25s} {'sqlite':>10s} {'postgres':>10s} {'raw asyncpg':>12s}")
        for k in keys:
            raw = stores["raw asyncpg"].get(k)
            print(
                f"{k:25s} {stores['sqlite'][k] * 1e6:10.0f} {stores['postgres'][k] * 1e6:10.0f}"
                f" {'' if raw is None else f'{raw * 1e6:12.0f}'}"
            )
        print("\n## search")
        for k, v in (await bench_search(url, tmp, args.messages, args.dim)).items():
            print(f"{k:45s} {v:12.4f}")
        print("\n## writer processes")
        for k, v in bench_writers(url, tmp, args.writer_appends).items():
            print(f"{k:45s} {v:10.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--writer-appends", type=int, default=500)
    asyncio.run(amain(parser.parse_args()))


if __name__ == "__main__":
    main()
