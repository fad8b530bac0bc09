"""Copy-on-write lineage under every write: random appends, pops, clears, forks and deletes on
PostgreSQL give the same transcripts as MemoryContextStore (deep copies), and freed segments
leave no rows behind."""

from __future__ import annotations

import random

from axio_context import MemoryContextStore
from axio_context.context import ContextStore
from axio_context.testing import text
from axio_context_postgres import Pool, PostgresContextStore


async def test_random_lineage_matches_memory(pool: Pool) -> None:
    rng = random.Random(23)
    pairs: list[tuple[ContextStore, PostgresContextStore]] = [
        (MemoryContextStore(), PostgresContextStore(pool, "lineage-root", project="lin"))
    ]
    for step in range(200):
        mem, pg = rng.choice(pairs)
        op = rng.choices(["append", "pop", "clear", "fork"], weights=[10, 3, 1, 2])[0]
        if op == "append":
            m = text(rng.choice(["user", "assistant"]), f"step {step}")
            await mem.append(m)
            await pg.append(m)
        elif op == "pop":
            assert isinstance(mem, MemoryContextStore)
            assert await mem.pop() == await pg.pop()
        elif op == "clear":
            await mem.clear()
            await pg.clear()
        else:
            pairs.append((await mem.fork(), await pg.fork()))
        for m2, p2 in pairs:
            assert isinstance(m2, MemoryContextStore)
            assert await p2.get_full_history() == await m2.get_full_history(), (step, op)
    for m2, p2 in pairs:
        info = await p2.info() if await p2.get_full_history() else None
        if info is not None:
            assert info.message_count == len(await m2.get_full_history())
    # Deleting every session frees every segment and row.
    for _, p2 in pairs:
        await p2.delete_session()
    async with pool.acquire() as conn:
        left = await conn.fetchval("SELECT count(*) FROM messages")  # this module's own database
        sessions = await conn.fetchval("SELECT count(*) FROM sessions WHERE project = 'lin'")
        segments = await conn.fetchval(
            "SELECT count(*) FROM segments g WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.seg = g.seg)"
            " AND NOT EXISTS (SELECT 1 FROM segments b WHERE b.base_seg = g.seg)"
        )
    assert sessions == 0
    assert segments == 0  # nothing unreachable is kept
    assert left == 0
