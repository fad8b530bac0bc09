"""A PostgreSQL context queue and pool writer process for the multi-process test.

Usage: ``pool_worker.py URL NAME COUNT``

Opens its own connection pool and the queue ``shared-q`` and pool ``shared-p`` (made by the
test), prints "ready", waits for a line on stdin, then COUNT times: appends ``NAME-i`` to the
queue and adds the item ``NAME-i`` to the pool. Prints one JSON line with the sizes its own copy
saw after each change. Any exception ends the process with status 1 and its traceback.
"""

from __future__ import annotations

import asyncio
import json
import sys

from axio_context.pools import ContextItem
from axio_context_postgres import connect
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue


async def main(url: str, name: str, count: int) -> None:
    pool = await connect(url, min_size=1, max_size=1)
    try:
        queue = await PostgresContextQueue.open(pool, "shared-q", create=False)
        items = await PostgresContextPool.open(pool, "shared-p", create=False)
        print("ready", flush=True)
        sys.stdin.readline()
        sizes = []
        for i in range(count):
            await queue.append(ContextItem(f"{name}-{i}"))
            await items.add(ContextItem(i, f"{name} item {i}", f"{name}-{i}"))
            sizes.append(len(items))
        print(json.dumps({"sizes": sizes}), flush=True)
    finally:
        await pool.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
