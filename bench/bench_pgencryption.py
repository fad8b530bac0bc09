"""Issue 34's encryption benchmark, PostgreSQL side: what a key costs the PostgreSQL store, whose
client seals each payload with AES-256-GCM (``axio_context_postgres.sealed``).

Sides, alternated round by round in one process, each on a fresh database of one embedded
PostgreSQL server (``fsync=off``, as the tests run it; unix socket):

- **plain**: the store as it is (payload, search text and its ``tsvector``);
- **sealed**: the same store opened with a key: the payload and preview sealed on the client,
  no search text (so the server builds an empty ``tsvector``), every row read back opened.

Measured: **append**, the median of ``--messages`` single appends to one session (each one
statement, one round trip); **load**, ``get_history`` of that session (median of ``--repeat``);
**pool load**, opening a context pool of ``--items`` items (median of ``--repeat``). Beside each
read's wall time, its **client CPU** (``time.thread_time`` of the one thread that runs the event
loop, asyncpg's decoding and every AES-GCM open): what the key adds on the client, which a
loaded machine's scheduling blurs less than wall time (the server's part is the same on both
sides).
``bench/bench_encryption.py`` is the SQLite side (SQLCipher).

Run: ``python -m bench.bench_pgencryption`` (``--quick`` for a smoke run); ``--json FILE`` writes
the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from axio_context import Message
from bench.bench_encryption import KEY, _message, time_store


async def _one_round(
    url: str, key: bytes | None, messages: list[Message], items: int, repeat: int
) -> dict[str, float]:
    from axio_context.pools import ContextItem
    from axio_context_postgres import PostgresContextStore, connect
    from axio_context_postgres.pools import PostgresContextPool

    pool = await connect(url, min_size=1, max_size=2, key=key)
    try:
        store = PostgresContextStore(pool, "bench", project="/bench")
        appends, loads = await time_store(store, messages, repeat)
        load_cpu = []
        for _ in range(repeat):
            c = time.thread_time()
            await store.get_history()
            load_cpu.append(time.thread_time() - c)
        ranked = await PostgresContextPool.open(pool, "bench", items)
        for i in range(items):
            await ranked.add(
                ContextItem(content={"note": f"item {i} " * 40}, description=f"item {i}", id=f"k{i}")
            )
        pool_loads, pool_cpu = [], []
        for _ in range(repeat):
            t, c = time.perf_counter(), time.thread_time()
            opened = await PostgresContextPool.open(pool, "bench", create=False)
            pool_loads.append(time.perf_counter() - t)
            pool_cpu.append(time.thread_time() - c)
        assert len(opened.items) == items
    finally:
        await pool.close()
    return {
        "append_us": statistics.median(appends) * 1e6,
        "load_ms": statistics.median(loads) * 1e3,
        "pool_load_ms": statistics.median(pool_loads) * 1e3,
        "load_cpu_ms": statistics.median(load_cpu) * 1e3,
        "pool_cpu_ms": statistics.median(pool_cpu) * 1e3,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    import asyncpg

    from axio_context_postgres.embedded import EmbeddedServer

    messages = [_message(i) for i in range(args.messages)]
    sides: dict[str, list[dict[str, float]]] = {"plain": [], "sealed": []}
    with EmbeddedServer() as server:
        admin = await asyncpg.connect(server.url())
        try:
            for r in range(args.rounds):
                order = ["plain", "sealed"] if r % 2 == 0 else ["sealed", "plain"]
                for side in order:
                    name = f"bench_{side}_{r}"
                    await admin.execute(f"CREATE DATABASE {name}")
                    key = KEY if side == "sealed" else None
                    sides[side].append(
                        await _one_round(server.url(name), key, messages, args.items, args.repeat)
                    )
                    await admin.execute(f"DROP DATABASE {name}")
        finally:
            await admin.close()
    result: dict[str, Any] = {}
    for side, rounds in sides.items():
        result[side] = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    result["setup"] = {
        "messages": args.messages,
        "items": args.items,
        "rounds": args.rounds,
        "repeat": args.repeat,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--items", type=int, default=200, help="items of the context pool")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per side, sides alternated")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.items, args.rounds, args.repeat = 200, 20, 2, 3
    result = asyncio.run(main_async(args))
    plain, sealed = result["plain"], result["sealed"]
    print(
        f"{'side':<8} {'append us':>10} {'load ms':>9} {'pool load ms':>13} {'load cpu':>9} {'pool cpu':>9}"
    )
    for side in ("plain", "sealed"):
        r = result[side]
        print(
            f"{side:<8} {r['append_us']:>10.0f} {r['load_ms']:>9.2f} {r['pool_load_ms']:>13.2f}"
            f" {r['load_cpu_ms']:>9.2f} {r['pool_cpu_ms']:>9.2f}"
        )
    print(
        f"sealed / plain: append {sealed['append_us'] / plain['append_us']:.2f}x,"
        f" load {sealed['load_ms'] / plain['load_ms']:.2f}x,"
        f" pool load {sealed['pool_load_ms'] / plain['pool_load_ms']:.2f}x;"
        f" client CPU: load {sealed['load_cpu_ms'] / plain['load_cpu_ms']:.2f}x,"
        f" pool load {sealed['pool_cpu_ms'] / plain['pool_cpu_ms']:.2f}x"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
