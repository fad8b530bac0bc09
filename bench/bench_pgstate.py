"""Resumable state on PostgreSQL: save_state / load_state against SQLite and the raw driver.

The state of :mod:`bench.bench_state` (``--subagents`` histories of ``--messages`` pydantic-ai
message dicts each, ~1 KB apiece, plus prompts, usage records and deferred calls). Measured, each
the median of ``--repeat`` runs, on one embedded PostgreSQL (``fsync=off``, as the tests run it)
and one SQLite file on the same machine:

- **first save**: every subagent session written;
- **turn save**: the same state after one more turn: only the new messages are written;
- **load**: ``load_state`` rebuilding ``subagent_history`` from the subagent sessions.

The limit: **raw asyncpg**, one transaction inserting the same messages as JSON rows (all for the
first save, the new ones for a turn) and upserting one state row; loading them back and decoding.
**raw + tsvector** is the same with the rows made searchable as ours are (a generated
``tsvector`` with a GIN index): the limit for a searchable history.

Run: ``python -m bench.bench_pgstate`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from axio_context.state import ResumableState
from bench.bench_state import make_state

_RAW_SCHEMA = """
CREATE TABLE raw_msgs (session text, pos integer, body text, PRIMARY KEY (session, pos));
CREATE TABLE raw_states (session text PRIMARY KEY, body text NOT NULL);
"""
# The same rows made searchable as ours are (a generated tsvector and its GIN index).
_INDEXED: Final = """
ALTER TABLE raw_msgs ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED;
CREATE INDEX raw_msgs_tsv ON raw_msgs USING gin (tsv);
"""


async def _median(
    runs: int, prepare: Callable[[int], Awaitable[Any]], call: Callable[[Any], Awaitable[Any]]
) -> float:
    times = []
    for r in range(runs):
        arg = await prepare(r)
        start = time.perf_counter()
        await call(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def _ours(runs: int, base: ResumableState, grown: ResumableState, backend: Any) -> dict[str, float]:
    """First save, turn save and load through ``backend`` = (make_store, save_state, load_state)."""
    make, save, load = backend

    async def fresh(r: int) -> Any:
        return make(f"first-{r}")

    async def saved(r: int) -> Any:
        store = make(f"turn-{r}")
        await save(store, base)
        return store

    async def first0(r: int) -> Any:
        return make("turn-0")

    async def save_base(store: Any) -> None:
        await save(store, base)

    async def save_grown(store: Any) -> None:
        await save(store, grown)

    async def loaded(store: Any) -> None:
        assert await load(store) == grown, "the benchmark's state did not round-trip"

    return {
        "first save": await _median(runs, fresh, save_base),
        "turn save": await _median(runs, saved, save_grown),
        "load": await _median(runs, first0, loaded),
    }


async def _raw(
    url: str, runs: int, base: ResumableState, grown: ResumableState, messages: int, indexed: bool
) -> dict[str, float]:
    import asyncpg

    conn = await asyncpg.connect(url)
    await conn.execute("DROP TABLE IF EXISTS raw_msgs, raw_states")
    await conn.execute(_RAW_SCHEMA + (_INDEXED if indexed else ""))

    async def save(session: str, state: ResumableState, start: int) -> None:
        async with conn.transaction():
            rows = [
                (f"{name}@{session}", i, json.dumps(m))
                for name, items in state.subagent_history.items()
                for i, m in enumerate(items)
                if i >= start
            ]
            await conn.executemany("INSERT INTO raw_msgs VALUES ($1, $2, $3)", rows)
            await conn.execute(
                "INSERT INTO raw_states VALUES ($1, $2)"
                " ON CONFLICT (session) DO UPDATE SET body = excluded.body",
                session,
                json.dumps(state.to_dict(subagents=False)),
            )

    async def load(session: str) -> None:
        state = json.loads(await conn.fetchval("SELECT body FROM raw_states WHERE session = $1", session))
        history: dict[str, list[Any]] = {}
        for r in await conn.fetch(
            "SELECT session, body FROM raw_msgs WHERE session LIKE $1 ORDER BY session, pos", f"%@{session}"
        ):
            history.setdefault(r[0], []).append(json.loads(r[1]))
        state["subagent_history"] = history

    async def fresh(r: int) -> str:
        return f"first-{r}"

    async def saved(r: int) -> str:
        await save(f"turn-{r}", base, 0)
        return f"turn-{r}"

    async def turn0(r: int) -> str:
        return "turn-0"

    async def first(s: str) -> None:
        await save(s, base, 0)

    async def turn(s: str) -> None:
        await save(s, grown, messages)

    try:
        return {
            "first save": await _median(runs, fresh, first),
            "turn save": await _median(runs, saved, turn),
            "load": await _median(runs, turn0, load),
        }
    finally:
        await conn.close()


async def bench(subagents: int, messages: int, runs: int) -> dict[str, dict[str, float]]:
    import asyncpg

    from axio_context_postgres import PostgresContextStore, connect
    from axio_context_postgres.embedded import EmbeddedServer
    from axio_context_postgres.state import load_state as pg_load
    from axio_context_postgres.state import save_state as pg_save
    from axio_context_sqlite import SQLiteContextStore
    from axio_context_sqlite import connect as sqlite_connect
    from axio_context_sqlite.state import load_state as sq_load
    from axio_context_sqlite.state import save_state as sq_save

    base, grown = make_state(subagents, messages), make_state(subagents, messages, turns_more=1)
    out: dict[str, dict[str, float]] = {}
    with EmbeddedServer() as server, tempfile.TemporaryDirectory() as tmp:
        admin = await asyncpg.connect(server.url())
        await admin.execute("CREATE DATABASE bench")
        await admin.close()
        url = server.url("bench")
        async with sqlite_connect(Path(tmp) / "ours.db") as conn:
            sq = (lambda s: SQLiteContextStore(conn, s, project="bench"), sq_save, sq_load)
            out["sqlite"] = await _ours(runs, base, grown, sq)
        pool = await connect(url, min_size=1, max_size=2)
        try:
            pg = (lambda s: PostgresContextStore(pool, s, project="bench"), pg_save, pg_load)
            out["postgres"] = await _ours(runs, base, grown, pg)
        finally:
            await pool.close()
        out["raw asyncpg"] = await _raw(url, runs, base, grown, messages, indexed=False)
        out["raw + tsvector"] = await _raw(url, runs, base, grown, messages, indexed=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--subagents", type=int, default=4)
    parser.add_argument("--messages", type=int, default=100, help="messages per subagent (even)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 subagents x 10 messages, 2 runs")
    args = parser.parse_args()
    if args.quick:
        args.subagents, args.messages, args.repeat = 2, 10, 2
    messages = args.messages - args.messages % 2
    figures = asyncio.run(bench(args.subagents, messages, args.repeat))
    print(
        f"# bench_pgstate: {args.subagents} subagents x {messages} messages, python {sys.version.split()[0]}"
    )
    head = f"{'sqlite':>8s} {'postgres':>9s} {'raw':>7s} {'raw+tsv':>8s} {'pg/sqlite':>10s} {'pg/raw':>7s}"
    print(f"{'(median, ms)':12s} {head} {'pg/raw+tsv':>11s}")
    for k in figures["postgres"]:
        sq, pg, raw, tsv = (figures[b][k] for b in ("sqlite", "postgres", "raw asyncpg", "raw + tsvector"))
        print(
            f"{k:12s} {sq:8.1f} {pg:9.1f} {raw:7.1f} {tsv:8.1f}"
            f" {pg / sq:10.2f} {pg / raw:7.2f} {pg / tsv:11.2f}"
        )


if __name__ == "__main__":
    main()
