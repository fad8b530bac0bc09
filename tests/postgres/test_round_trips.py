"""The hot operations of a PostgreSQL session store are one statement each once the session
exists (issue 32: within 2x of raw asyncpg): no BEGIN/COMMIT around a lone read, no expiry or
existence probe before an append, the view's session row, checkpoint and rows in one query."""

from __future__ import annotations

from collections.abc import AsyncIterator

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
        sent.clear()
        await call()
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
