"""Run a statement that would take minutes through the library under ``asyncio.run``.

Usage: ``long_query.py DB``. Prints ``started`` once the statement runs on the connection's
worker thread; the test then sends SIGINT, and the process must end with KeyboardInterrupt
(the statement interrupted, ``close()`` not left waiting for it).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from axio_context_sqlite import connect
from axio_context_sqlite.store.calls import run

COUNT_TO_A_BILLION = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000)"
    " SELECT count(*) FROM n"
)


def _long(raw: Any) -> int:
    print("started", flush=True)
    return int(raw.execute(COUNT_TO_A_BILLION).fetchone()[0])


async def main(db: str) -> None:
    async with connect(db) as conn:
        await run(conn, _long)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
