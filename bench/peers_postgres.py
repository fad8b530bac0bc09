"""Issue 32's PostgreSQL rows: our PostgreSQL store against raw asyncpg on one embedded server,
the two sides alternated call by call (so a change of the machine's load falls on both alike):
append one message, the tail of 20 of 10k messages, a load of those 10k, a page of 50 of 2,000
sessions. The raw side is :func:`raw_side`'s statements, which ``bench.bench_postgres``'s store
part times one after the other. Part of ``python -m bench.peers``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from axio_context.testing import text

__all__ = ["ROUNDS", "raw_side", "run"]

#: Calls of each side per row (a load of 10k is ~50 ms, an append ~0.3 ms).
ROUNDS = {
    "append": 500,
    "tail 20 (of 10k)": 50,
    "load 10k": 10,
    "fork (10k history)": 50,
    "list 2k: page of 50": 30,
    "list 2k: all": 5,
}


async def raw_side(conn: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    """The raw asyncpg statements each row is compared with, on tables of the store's keys and
    size (made here): a bare INSERT, SELECTs of a session's 10k payloads and its last 20, a fork
    and the listing as bare SQL on a sessions table with the same keys and index."""
    payload = os.urandom(700)
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS raw_msg (sid text, pos integer, payload bytea, PRIMARY KEY (sid, pos))"
    )
    await conn.executemany(
        "INSERT INTO raw_msg VALUES ('big', $1, $2)", [(i, payload) for i in range(10_000)]
    )
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS raw_sess (sid bigserial PRIMARY KEY, id text UNIQUE, parent text,"
        " fork_pos integer, created bigint, n integer, preview text)"
    )
    await conn.execute("CREATE INDEX IF NOT EXISTS raw_sess_listing ON raw_sess (created DESC, sid DESC)")
    await conn.executemany(
        "INSERT INTO raw_sess (id, created, n, preview) VALUES ($1, $2, 1, $3)",
        [(f"list-{k}", k, f"session {k}") for k in range(2000)],
    )
    await conn.execute("ANALYZE raw_sess")
    appended = iter(range(10**9))
    forks = iter(range(10**9))
    listing = "SELECT id, n, preview, created FROM raw_sess ORDER BY created DESC, sid DESC"
    return {
        "append": lambda: conn.execute("INSERT INTO raw_msg VALUES ('a', $1, $2)", next(appended), payload),
        "tail 20 (of 10k)": lambda: conn.fetch(
            "SELECT payload FROM raw_msg WHERE sid = 'big' ORDER BY pos DESC LIMIT 20"
        ),
        "load 10k": lambda: conn.fetch("SELECT payload FROM raw_msg WHERE sid = 'big' ORDER BY pos"),
        "fork (10k history)": lambda: conn.execute(
            "INSERT INTO raw_sess (id, parent, fork_pos, created, n) VALUES ($1, 'big', 10000, 0, 10000)",
            f"fork-{next(forks)}",
        ),
        "list 2k: page of 50": lambda: conn.fetch(listing + " LIMIT 50"),
        "list 2k: all": lambda: conn.fetch(listing),
    }


async def run(url: str, quick: bool = False) -> dict[str, tuple[float, float]]:
    """``{work: (ours, raw)}``: median seconds, the sides alternated (``quick``: a fifth of the
    rounds). The store's data is bench_stores': 10k messages of ~750 bytes, 2,000 sessions."""
    import asyncpg

    from axio_context_postgres import PostgresContextStore, connect

    from .peers_agents import alternated

    pool = await connect(url, min_size=1, max_size=4)
    conn = await asyncpg.connect(url)
    try:
        one = PostgresContextStore(pool, "append", project="bench")
        await one.append(text("user", "first"))
        big = PostgresContextStore(pool, "big", project="bench")
        msgs = [
            text("user" if i % 2 == 0 else "assistant", f"message {i} " + "lorem ipsum " * 60)
            for i in range(10_000)
        ]
        for i in range(0, len(msgs), 1000):
            await big.append_many(msgs[i : i + 1000])
        for k in range(2000):
            listed = PostgresContextStore(pool, f"list-{k}", project="bench")
            await listed.append(text("user", f"session {k}"))
        await pool.execute("ANALYZE sessions")  # what autovacuum does a minute after 2,000 new sessions
        lister = PostgresContextStore(pool, "list-0", project="bench")
        raw = await raw_side(conn)
        ours: dict[str, Callable[[], Awaitable[Any]]] = {
            "append": lambda: one.append(text("user", "hello " * 100)),
            "tail 20 (of 10k)": lambda: big.get_history(limit=20),
            "load 10k": big.get_history,
            "list 2k: page of 50": lambda: lister.list_sessions_page(50),
        }
        out = {}
        for work, fn in ours.items():
            rounds = max(3, ROUNDS[work] // (5 if quick else 1))
            out[work] = await alternated(fn, raw[work], rounds)
        return out
    finally:
        await conn.close()
        await pool.close()
