"""A memory-block writer process for the two-writer tests.

Usage: ``block_worker.py WHERE NAME COUNT``

Opens the database at WHERE through the registry, prints "ready", waits for a line on stdin,
then COUNT times: reads the shared block ``counter``, writes its number plus one naming the
version it read, and reads again and retries when the write is refused as stale. Prints one
JSON line ``{"done": COUNT, "stale": n}`` (n: the refused writes). Any other exception ends the
process with status 1 and its traceback on stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys

from axio_context.backends.registry import open_database
from axio_context.memory_blocks import StaleVersionError


async def main(where: str, name: str, count: int) -> None:
    async with open_database(where, busy_timeout=30.0) as db:
        blocks = db.memory_stores().blocks()
        print("ready", flush=True)
        sys.stdin.readline()
        stale = 0
        for _ in range(count):
            while True:
                read = await blocks.get("counter")
                try:
                    await blocks.set(
                        "counter", str(int(read.value) + 1), expected_version=read.version, by=name
                    )
                    break
                except StaleVersionError:
                    stale += 1
        print(json.dumps({"done": count, "stale": stale}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
