"""The PostgreSQL history provider against the SQLite one and the raw asyncpg limit, in one run.

``python -m bench.bench_postgres_agents [--messages 20000] [--appends 1000] [--rounds 200]``
starts an embedded PostgreSQL (fsync off, as in the tests) and measures, as medians and ratios:

- **page**: ``get_messages(limit=50, offset=...)`` at random offsets of a ``--messages`` agent
  session (one run cleared, so the marks are in play), against reading the whole session through
  the provider, and against the raw limit: the same 50 rows' payloads by one plain ``SELECT``.
  A page must cost a constant, not a share of the session. The SQLite provider's page is beside.
- **append**: one message with a run tag, without one, ``PostgresContextStore.append`` of a plain
  session, and the raw limit (the session-row ``UPDATE`` and the ``INSERT`` in one transaction),
  alternated in rounds of 50 so drift hits all alike; the SQLite provider's tagged append beside.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from axio_context import Message, TextBlock
from axio_context.codec import encode_message_msgpack

PAGE = 50


def _message(i: int) -> Message:
    role = "user" if i % 2 == 0 else "assistant"
    words = f"message {i} about the deployment of service {i % 97} and its rollback plan"
    return Message(role=role, content=[TextBlock(text=words)])


def _us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def _each(fn: Callable[[int], Awaitable[Any]], args: list[int]) -> list[float]:
    out = []
    for a in args:
        t = time.perf_counter()
        await fn(a)
        out.append(time.perf_counter() - t)
    return out


async def _fill(provider: Any, n: int) -> None:
    for start in range(0, n, 1_000):
        batch = [_message(i) for i in range(start, min(start + 1_000, n))]
        await provider.append_many("bench", batch, session_id="big", run_id=f"run-{start // 1_000}")
    await provider.clear_run("bench", session_id="big", run_id="run-1")


async def bench_postgres(url: str, n: int, appends: int, rounds: int) -> dict[str, float]:
    from axio_context_postgres import PostgresContextStore, connect
    from axio_context_postgres.agents import PostgresHistoryProvider

    out: dict[str, float] = {}
    pool = await connect(url, min_size=1, max_size=2)
    try:
        provider = PostgresHistoryProvider(pool, project="bench")
        await _fill(provider, n)
        seg = await pool.fetchval("SELECT seg FROM sessions WHERE id = 'big:bench'")
        rng = random.Random(23)
        offsets = [rng.randrange(0, n - 2_000 - PAGE) for _ in range(rounds)]

        async def page(o: int) -> None:
            await provider.get_messages("bench", session_id="big", limit=PAGE, offset=o)

        async def raw_page(o: int) -> None:
            await pool.fetch(
                "SELECT payload FROM messages WHERE seg = $1 AND position >= $2 AND position < $3"
                " ORDER BY position",
                seg,
                o,
                o + PAGE,
            )

        await _each(page, offsets[:10])
        out["page"] = _us(await _each(page, offsets))
        out["page_raw"] = _us(await _each(raw_page, offsets))
        out["whole"] = _us(await _each(lambda _: provider.get_messages("bench", session_id="big"), [0] * 5))
        out["count"] = _us(await _each(lambda _: provider.count_messages("bench", session_id="big"), offsets))

        store = PostgresContextStore(pool, "plain", "bench")
        await store.append(_message(0))
        await provider.append("bench", _message(0), session_id="a", run_id="r")
        await pool.execute("CREATE TABLE IF NOT EXISTS b_sess (id text PRIMARY KEY, n integer NOT NULL)")
        await pool.execute(
            "CREATE TABLE IF NOT EXISTS b_msg (sid text, pos integer, payload bytea, PRIMARY KEY (sid, pos))"
        )
        await pool.execute("INSERT INTO b_sess VALUES ('s', 0) ON CONFLICT DO NOTHING")
        payload = encode_message_msgpack(_message(1))

        async def raw_append(_: int) -> None:
            async with pool.acquire() as conn, conn.transaction():
                pos = await conn.fetchval("UPDATE b_sess SET n = n + 1 WHERE id = 's' RETURNING n - 1")
                await conn.execute("INSERT INTO b_msg VALUES ('s', $1, $2)", pos, payload)

        kinds: dict[str, Callable[[int], Awaitable[Any]]] = {
            "append_tagged": lambda i: provider.append("bench", _message(i), session_id="a", run_id="r"),
            "append_untagged": lambda i: provider.append("bench", _message(i), session_id="a"),
            "append_store": lambda i: store.append(_message(i)),
            "append_raw": raw_append,
        }
        samples: dict[str, list[float]] = {k: [] for k in kinds}
        for r in range(0, appends, 50):
            for k, fn in kinds.items():
                samples[k] += await _each(fn, list(range(r, r + 50)))
        out.update({k: _us(v) for k, v in samples.items()})
    finally:
        await pool.close()
    return out


async def bench_sqlite(db: Path, n: int, appends: int, rounds: int) -> dict[str, float]:
    from axio_context_sqlite import connect
    from axio_context_sqlite.agents import SQLiteHistoryProvider

    out: dict[str, float] = {}
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="bench")
        await _fill(provider, n)
        rng = random.Random(23)
        offsets = [rng.randrange(0, n - 2_000 - PAGE) for _ in range(rounds)]

        async def page(o: int) -> None:
            await provider.get_messages("bench", session_id="big", limit=PAGE, offset=o)

        await _each(page, offsets[:10])
        out["page"] = _us(await _each(page, offsets))
        await provider.append("bench", _message(0), session_id="a", run_id="r")
        tagged = await _each(
            lambda i: provider.append("bench", _message(i), session_id="a", run_id="r"), list(range(appends))
        )
        out["append_tagged"] = _us(tagged)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--appends", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    from axio_context_postgres.embedded import EmbeddedServer

    with EmbeddedServer() as server, tempfile.TemporaryDirectory() as d:
        pg = asyncio.run(bench_postgres(server.url(), args.messages, args.appends, args.rounds))
        lite = asyncio.run(bench_sqlite(Path(d) / "a.db", args.messages, args.appends, args.rounds))
    print(f"history provider, {args.messages:,} messages, medians in microseconds")
    print(
        f"page of {PAGE}      postgres {pg['page']:8.0f}  raw SELECT {pg['page_raw']:8.0f}"
        f"  ratio {pg['page'] / pg['page_raw']:.2f}x   sqlite {lite['page']:8.0f}"
    )
    print(f"whole session    postgres {pg['whole']:8.0f}  page/whole {pg['page'] / pg['whole']:.4f}")
    print(f"count_messages   postgres {pg['count']:8.0f}")
    raw = pg["append_raw"]
    for k in ("append_tagged", "append_untagged", "append_store", "append_raw"):
        print(f"{k:16s} postgres {pg[k]:8.0f}  vs raw {pg[k] / raw:.2f}x")
    print(
        f"tag cost         postgres {pg['append_tagged'] / pg['append_untagged']:.2f}x"
        f"   sqlite tagged append {lite['append_tagged']:8.0f}"
    )


if __name__ == "__main__":
    main()
