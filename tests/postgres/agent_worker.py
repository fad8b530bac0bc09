"""A PostgreSQL history-provider writer process for the multi-process test.

Usage: ``agent_worker.py URL NAME COUNT``

Opens its own pool, prints "ready", waits for a line on stdin, then COUNT times appends a pair
``NAME-i-0``, ``NAME-i-1`` to agent ``a`` in thread ``t`` tagged with run ``NAME``; last, appends
one message to its own thread ``own-NAME`` tagged with the run ``contested`` every worker tries.
Prints one JSON line ``{"contested": true|false}`` (false: refused with RunSessionError). Any
other exception ends the process with status 1 and its traceback on stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys

from axio_context.agents import RunSessionError
from axio_context.testing import text
from axio_context_postgres import connect
from axio_context_postgres.agents import PostgresHistoryProvider


async def main(url: str, name: str, count: int) -> None:
    pool = await connect(url, min_size=1, max_size=1)
    try:
        provider = PostgresHistoryProvider(pool, project="p")
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(count):
            pair = [text("user", f"{name}-{i}-0"), text("assistant", f"{name}-{i}-1")]
            await provider.append_many("a", pair, session_id="t", run_id=name)
        try:
            await provider.append("a", text("user", name), session_id=f"own-{name}", run_id="contested")
            contested = True
        except RunSessionError:
            contested = False
        print(json.dumps({"contested": contested}), flush=True)
    finally:
        await pool.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
