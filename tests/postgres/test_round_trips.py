"""The hot operations of a PostgreSQL session store are one statement each once the session
exists (issue 32: within 2x of raw asyncpg): no BEGIN/COMMIT around a lone read, no expiry or
existence probe before an append, the view's session row, checkpoint and rows in one query."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from axio_context.catalog.listing_sql import list_page
from axio_context.checkpoints import Checkpoint
from axio_context.errors import CorruptDataError
from axio_context.messages import Message
from axio_context.sql.plan import is_one_statement
from axio_context.testing import text
from axio_context_postgres import Pool, PostgresContextStore, connect


@pytest.fixture
async def one(pg_url: str) -> AsyncIterator[tuple[Pool, list[str]]]:
    """A pool of one connection, and every statement it sends (asyncpg's query logger)."""
    pool = await connect(pg_url, min_size=1, max_size=1)
    sent: list[str] = []
    async with pool.acquire() as conn:
        conn.add_query_logger(lambda record: sent.append(record.query))
    try:
        yield pool, sent
    finally:
        await pool.close()


def _texts(messages: list[Message]) -> list[str]:
    return [getattr(m.content[0], "text", "") for m in messages]


async def test_append_tail_load_and_page_are_one_statement_each(one: tuple[Pool, list[str]]) -> None:
    pool, sent = one
    store = PostgresContextStore(pool, "rt", project="rt")
    await store.append_many([text("user", f"m{i}") for i in range(30)])
    for call in (
        lambda: store.append(text("user", "m30")),
        lambda: store.get_history(limit=20),
        store.get_history,
        lambda: store.list_sessions_page(50),
    ):
        await asyncio.sleep(0)  # asyncpg hands query loggers their records with call_soon
        sent.clear()
        await call()
        await asyncio.sleep(0)
        assert len(sent) == 1, sent
        assert not sent[0].lstrip().upper().startswith(("BEGIN", "COMMIT", "SELECT TO_REGCLASS"))
    assert is_one_statement(list_page)
    assert _texts(await store.get_history(limit=3)) == ["m28", "m29", "m30"]


async def test_the_one_statement_view_reads_checkpoints_and_forks(pool: Pool) -> None:
    store = PostgresContextStore(pool, "rt-cp", project="rt")
    await store.append_many([text("user", f"m{i}") for i in range(10)])
    await store.add_checkpoint(Checkpoint(position=6, summary=[text("user", "summary")]))
    fork = await store.fork()
    await fork.append(text("user", "f0"))
    assert _texts(await fork.get_history()) == ["summary", "m6", "m7", "m8", "m9", "f0"]
    assert _texts(await fork.get_history(limit=2)) == ["m9", "f0"]
    assert _texts(await fork.get_history(limit=6)) == ["summary", "m6", "m7", "m8", "m9", "f0"]
    assert _texts(await store.get_history(limit=5)) == ["summary", "m6", "m7", "m8", "m9"]


async def test_a_damaged_row_is_still_named(pool: Pool) -> None:
    store = PostgresContextStore(pool, "rt-bad", project="rt")
    await store.append_many([text("user", f"m{i}") for i in range(3)])
    await pool.execute(
        "UPDATE messages SET payload = '\\xc1'::bytea WHERE position = 1"
        " AND seg = (SELECT seg FROM sessions WHERE id = 'rt-bad')"
    )
    with pytest.raises(CorruptDataError, match="message 1 of session 'rt-bad'"):
        await store.get_history()
    assert _texts(await store.get_history(limit=1)) == ["m2"]


async def test_the_server_writes_times_as_format_time_does(pool: Pool) -> None:
    import random

    from axio_context.transcript import format_time
    from axio_context_postgres.info import iso_time

    first, last = -62_135_596_800_000, 253_402_300_799_999  # years 1 and 9999
    rng = random.Random(32)
    values = [first, last, -1, 0, 1, 999, -999, -1000, 86_399_999, 1_795_000_000_123]
    values += [rng.randint(first, last) for _ in range(2000)]
    got = await pool.fetchval(
        f"SELECT array_agg({iso_time('t')} ORDER BY i) FROM unnest($1::bigint[]) WITH ORDINALITY AS u(t, i)",
        values,
    )
    assert got == [format_time(v) for v in values]


async def _plans(pool: Pool, like: str) -> tuple[int, int]:
    """(generic, custom) plans the server made for the pool's prepared statement like ``like``."""
    row = await pool.fetchrow(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE $1", like
    )
    assert row is not None, like
    return int(row[0]), int(row[1])


async def test_the_hot_statements_are_planned_once_not_per_call(one: tuple[Pool, list[str]]) -> None:
    # A parameter the planner prices better when it sees it (a LIMIT, an array's length) made
    # the server plan the statement afresh on every call (a custom plan, ~0.1 ms each).
    pool, _ = one
    # enough sessions in the project for a LIMIT to matter to the planner (2,000: the bench's)
    await pool.execute(
        "WITH g AS (INSERT INTO segments (owner) SELECT 'rt-plans-' || i FROM generate_series(1, 2000) i"
        " RETURNING seg, owner) INSERT INTO sessions (id, seg, project, created_at, updated_at)"
        " SELECT owner, seg, 'rt-plans', seg, seg FROM g"
    )
    await pool.execute("ANALYZE sessions")
    store = PostgresContextStore(pool, "rt-plans", project="rt-plans")
    await store.append(text("user", "first"))
    for i in range(12):
        await store.append(text("user", f"m{i}"))
        await store.list_sessions_page(50)
        await store.get_history(limit=20)
    for like in ("WITH s AS (UPDATE sessions%", "SELECT id, next_position%LIMIT%", "%WITH RECURSIVE s AS%"):
        generic, custom = await _plans(pool, like)
        assert custom <= 5 and generic >= 7, (like, generic, custom)


async def test_a_released_connection_goes_back_without_a_task(one: tuple[Pool, list[str]]) -> None:
    # asyncpg shields each release in a new task (a loop iteration per call); a release that
    # cannot wait on anything is made in place.
    pool, _ = one
    store = PostgresContextStore(pool, "rt-tasks", project="rt")
    await store.append(text("user", "first"))
    loop = asyncio.get_running_loop()
    made: list[object] = []

    def counting(lp: asyncio.AbstractEventLoop, coro: object, **kw: object) -> asyncio.Task[object]:
        made.append(coro)
        return asyncio.Task(coro, loop=lp, **kw)  # type: ignore[arg-type]

    loop.set_task_factory(counting)  # type: ignore[arg-type]
    try:
        await store.append(text("user", "second"))
        await store.get_history(limit=2)
        await store.list_sessions_page(50)
    finally:
        loop.set_task_factory(None)
    assert made == []
    assert _texts(await store.get_history()) == ["first", "second"]


async def test_a_connection_released_inside_a_transaction_is_rolled_back(one: tuple[Pool, list[str]]) -> None:
    pool, _ = one
    conn = await pool.acquire()
    tx = conn.transaction()
    await tx.start()
    await conn.execute("CREATE TEMP TABLE rt_left_open (x int)")
    await pool.release(conn)  # the slow, shielded way: ROLLBACK first
    async with pool.acquire() as again:
        assert not again.is_in_transaction()
        assert await again.fetchval("SELECT to_regclass('pg_temp.rt_left_open')") is None


async def test_one_message_is_appended_without_arrays(one: tuple[Pool, list[str]]) -> None:
    # A lone message binds its columns as scalars (no unnest of six one-item arrays); a batch
    # still binds arrays; both are one statement, at the same positions.
    pool, sent = one
    store = PostgresContextStore(pool, "rt-one", project="rt")
    await store.append(text("user", "m0"))
    await asyncio.sleep(0)
    sent.clear()
    await store.append(text("assistant", "m1"))
    await store.append_many([text("user", "m2"), text("assistant", "m3")])
    await store.append(text("user", "m4"))
    await asyncio.sleep(0)
    assert len(sent) == 3, sent
    assert "unnest" not in sent[0] and "unnest" in sent[1] and "unnest" not in sent[2]
    assert _texts(await store.get_history()) == ["m0", "m1", "m2", "m3", "m4"]
    assert [i.message_count for i in await store.list_sessions() if i.session_id == "rt-one"] == [5]
    hits = await pool.fetchval(
        "SELECT count(*) FROM messages m JOIN sessions s ON s.seg = m.seg"
        " WHERE s.id = 'rt-one' AND m.tsv @@ to_tsquery('simple', 'm1 | m4')"
    )
    assert hits == 2  # indexed in the same statement


async def test_a_connection_whose_task_was_cancelled_mid_query_goes_back_clean(
    one: tuple[Pool, list[str]], pg_url: str
) -> None:
    # The pool's in-place release must leave a cancelled task's connection to asyncpg's way (the
    # query cancelled on the server, the transaction rolled back) and the next caller of the one
    # connection finds it idle and usable.
    pool, _ = one

    async def stuck(in_transaction: bool) -> None:
        async with pool.acquire() as conn:
            if in_transaction:  # begun by hand: nothing but the release rolls it back
                await conn.transaction().start()
                await conn.execute("CREATE TEMP TABLE rt_cancelled (x int)")
                await conn.execute("SELECT pg_sleep(60)")
            else:
                await conn.execute("SELECT pg_sleep(60)")

    watcher = await asyncpg.connect(pg_url)
    try:
        for in_transaction in (True, False):
            task = asyncio.create_task(stuck(in_transaction))
            while not await watcher.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE state = 'active' AND query = 'SELECT pg_sleep(60)'"
            ):
                assert not task.done()
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            async with pool.acquire() as again:
                assert not again.is_in_transaction()
                assert await again.fetchval("SELECT to_regclass('pg_temp.rt_cancelled')") is None
                assert await again.fetchval("SELECT 1") == 1
            store = PostgresContextStore(pool, f"rt-cancel-{in_transaction}", project="rt")
            await store.append(text("user", "after"))
            assert _texts(await store.get_history()) == ["after"]
    finally:
        await watcher.close()
