"""A session's reads on a large messages table: the plan reads one index range per segment of
the lineage (never the whole table), for the tail, a fork's tail and the token sums."""

from __future__ import annotations

from axio_context.testing import text
from axio_context_postgres import Pool, PostgresContextStore, lineage

#: Rows of other sessions around the one read: enough that a join over the whole table is the
#: plan PostgreSQL picks for the read as it was (a hash join with a sequential scan).
OTHER_ROWS = 60_000


async def _plan(pool: Pool, sql: str, *args: object) -> str:
    rows = await pool.fetch("EXPLAIN (COSTS OFF) " + sql, *args)
    return "\n".join(r[0] for r in rows)


async def test_tail_reads_use_an_index_range_per_segment(pool: Pool) -> None:
    base = PostgresContextStore(pool, "reads-base", project="reads")
    await base.append_many([text("user", f"m{i}") for i in range(300)])
    fork = await base.fork()
    await fork.append_many([text("assistant", f"f{i}") for i in range(30)])
    # other sessions' rows, written straight into their own segment (fast, same shape)
    seg = await pool.fetchval("INSERT INTO segments (owner) VALUES ('reads-other') RETURNING seg")
    await pool.execute(
        "INSERT INTO messages (seg, position, role, created_at, tokens, payload)"
        " SELECT $1, g, 'user', 0, 1, '\\x00'::bytea FROM generate_series(0, $2 - 1) g",
        seg,
        OTHER_ROWS,
    )
    await pool.execute("ANALYZE messages")
    row = await pool.fetchrow("SELECT seg, next_position FROM sessions WHERE id = $1", fork.session_id)
    f_seg, n = int(row[0]), int(row[1])
    # the read as it was, one join over the chain: the planner reads the whole table for it
    joined = lineage.CHAIN + (
        "SELECT m.position FROM chain c JOIN messages m ON m.seg = c.seg"
        " AND m.position >= GREATEST(c.lo, $3::integer) AND m.position < LEAST(c.hi, $4::integer)"
    )
    assert "Seq Scan on messages" in await _plan(pool, joined, f_seg, n, n - 20, n)
    for sql, args in (
        (lineage.READ, (f_seg, n, n - 20, n)),  # the fork's own rows
        (lineage.READ, (f_seg, n, 290, n)),  # and the parent's
        (lineage.TOKENS, (f_seg, n)),
        (lineage.VIEW, (fork.session_id, 20, 0)),  # the store's one-statement view
        (lineage.VIEW, (fork.session_id, 35, 0)),
    ):
        plan = await _plan(pool, sql, *args)
        assert "Seq Scan on messages" not in plan, plan
    tail = await fork.get_history(limit=20)
    assert [getattr(m.content[0], "text", "") for m in tail] == [f"f{i}" for i in range(10, 30)]
    both = await fork.get_history(limit=35)
    assert [getattr(m.content[0], "text", "") for m in both[:5]] == [f"m{i}" for i in range(295, 300)]
    b_seg = await pool.fetchval("SELECT seg FROM sessions WHERE id = 'reads-base'")
    own = await pool.fetchval(
        "SELECT sum(tokens) FROM messages WHERE seg = ANY($1::bigint[])", [b_seg, f_seg]
    )
    assert await lineage.tokens_upto(pool, f_seg, n) == own


async def test_a_nul_in_the_first_user_text_is_stored_and_read_back_whole(pool: Pool) -> None:
    # PostgreSQL text cannot hold NUL: the preview (a text column) gets a space, the message is whole
    store = PostgresContextStore(pool, "nul", project="/p")
    await store.append(text("user", "a\x00b"))
    assert (await store.get_history())[0].content[0].text == "a\x00b"  # type: ignore[union-attr]
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT preview FROM sessions WHERE id = 'nul'") == "a b"
