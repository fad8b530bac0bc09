"""A PostgreSQL task-store writer process for the multi-process test.

Usage: ``task_worker.py URL LIST_ID TASK_ID NAME COUNT``

Opens its own pool, prints "ready", waits for a line on stdin, then COUNT times: adds a task
titled ``NAME-i`` to the board, and calls ``increment_retry`` on TASK_ID. Prints one JSON line
``{"added": [[task_id, order], ...], "retries": n}`` (n: the calls that got a task back). Any
exception ends the process with status 1 and its traceback on stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys

from axio_context_postgres import connect
from axio_context_postgres.memory import PostgresTaskStore


async def main(url: str, list_id: str, task_id: str, name: str, count: int) -> None:
    pool = await connect(url, min_size=1, max_size=1)
    try:
        store = PostgresTaskStore(pool)
        print("ready", flush=True)
        sys.stdin.readline()
        added: list[tuple[str, int]] = []
        retries = 0
        for i in range(count):
            [task] = await store.add_tasks(list_id, [f"{name}-{i}"])
            added.append((task.id, task.order))
            if await store.increment_retry(list_id, task_id) is not None:
                retries += 1
        print(json.dumps({"added": added, "retries": retries}), flush=True)
    finally:
        await pool.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
