"""A writer process for the PostgreSQL tests: ``pg_writer.py URL SESSION_PREFIX SESSIONS N TAG``.

Appends N messages round-robin over SESSIONS shared sessions, printing ``ack <session> <i>``
after each append returned (flushed), so a test can kill it and check every acknowledged one.
"""

from __future__ import annotations

import asyncio
import sys

from axio_context.testing import text
from axio_context_postgres import PostgresContextStore, connect


async def main(url: str, prefix: str, sessions: int, n: int, tag: str) -> None:
    pool = await connect(url, min_size=1, max_size=2)
    try:
        stores = [PostgresContextStore(pool, f"{prefix}{k}", project="mp") for k in range(sessions)]
        for i in range(n):
            store = stores[i % sessions]
            await store.append(text("user", f"{tag} {i}"))
            sys.stdout.write(f"ack {store.session_id} {tag} {i}\n")
            sys.stdout.flush()
    finally:
        await pool.close()


if __name__ == "__main__":
    url, prefix, sessions, n, tag = sys.argv[1:6]
    asyncio.run(main(url, prefix, int(sessions), int(n), tag))
