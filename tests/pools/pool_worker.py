"""A process working on one persisted pool or queue (see test_processes.py).

``add DB NAME PREFIX N``: add N items ``PREFIX-i`` to pool NAME, one transaction each, after
a "ready" line and a line on stdin (so several processes start together).
``append DB NAME N``: append N items to queue NAME, printing each count as it commits, until
killed.
``expire DB NAME``: add "gone" (a TTL of 1 s) and "kept" to pool NAME, print "ready", then for each
stdin line print the ids its copy shows ("show") or what ``refresh`` returned and them ("refresh").
"""

from __future__ import annotations

import asyncio
import sys

from axio_context.pools import ContextItem
from axio_context_sqlite import connect
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue


async def add(db: str, name: str, prefix: str, n: int) -> None:
    async with connect(db) as conn:
        pool = await SQLiteContextPool.open(conn, name)
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(n):
            await pool.add(ContextItem({"by": prefix, "i": i}, f"{prefix} item {i}", f"{prefix}-{i}"))
            await pool.add(ContextItem({"by": prefix}, "shared counter", "shared"))
    print("done", flush=True)


async def append(db: str, name: str, n: int) -> None:
    async with connect(db) as conn:
        queue = await SQLiteContextQueue.open(conn, name, limit=5)
        for i in range(n):
            await queue.append(ContextItem(i, f"step {i}"))
            print(i, flush=True)


async def expire(db: str, name: str) -> None:
    async with connect(db) as conn:
        pool = await SQLiteContextPool.open(conn, name)
        await pool.add(ContextItem(1, "for a second", "gone"), ttl=1.0)
        await pool.add(ContextItem(2, "for good", "kept"))
        print("ready", flush=True)
        for line in sys.stdin:
            said = str(await pool.refresh()) + " " if line.strip() == "refresh" else ""
            print(said + ",".join(str(i.id) for i in pool.items), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "add":
        asyncio.run(add(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
    elif sys.argv[1] == "expire":
        asyncio.run(expire(sys.argv[2], sys.argv[3]))
    else:
        asyncio.run(append(sys.argv[2], sys.argv[3], int(sys.argv[4])))
