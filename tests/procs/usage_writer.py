"""A process that records usage rows into one database, for the multi-process usage test.

Usage: ``usage_writer.py DB NAME COUNT``: records COUNT requests (input 10, output 1 each,
cost 0.001) to session NAME with run NAME-run, agent "shared", model "m", then prints "done".
"""

from __future__ import annotations

import asyncio
import sys
from decimal import Decimal

from axio_context.usage_limits import RequestUsage
from axio_context_sqlite import connect
from axio_context_sqlite.usage import SQLiteUsageRecorder


async def main(db: str, name: str, count: int) -> None:
    async with connect(db) as conn:
        recorder = SQLiteUsageRecorder(conn, "multi")
        for _ in range(count):
            await recorder.record(
                RequestUsage(input_tokens=10, output_tokens=1, cost=Decimal("0.001")),
                session_id=name,
                agent="shared",
                run=f"{name}-run",
                model="m",
            )
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
