"""A process recording usage into PostgreSQL, for the many-writers usage test.

Usage: ``pg_usage_writer.py URL NAME COUNT``: first claims the run "contested" for session NAME
(prints "won" or "refused"), then records COUNT requests (input 10, output 1, cost 0.001, a
message each) to session NAME with run NAME-run, agent "shared", model "m", printing "ack I"
(flushed) after each returned, so a test can kill it and check every acknowledged one; "done".
"""

from __future__ import annotations

import asyncio
import sys
from decimal import Decimal

from axio_context.testing import text
from axio_context.usage_limits import RequestUsage, UsageError
from axio_context_postgres import connect
from axio_context_postgres.usage import PostgresUsageRecorder


async def main(url: str, name: str, count: int) -> None:
    pool = await connect(url, min_size=1, max_size=2)
    try:
        recorder = PostgresUsageRecorder(pool, "multi")
        try:
            await recorder.record(
                RequestUsage(input_tokens=1), session_id=name, agent="shared", run="contested"
            )
            print("won", flush=True)
        except UsageError:
            print("refused", flush=True)
        for i in range(count):
            await recorder.record(
                RequestUsage(input_tokens=10, output_tokens=1, cost=Decimal("0.001")),
                session_id=name,
                agent="shared",
                run=f"{name}-run",
                model="m",
                message=text("assistant", f"{name} {i}"),
            )
            sys.stdout.write(f"ack {i}\n")
            sys.stdout.flush()
    finally:
        await pool.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
