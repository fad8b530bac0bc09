"""The context queue and pool on PostgreSQL (the real server the tests start; their contract
suites run on every backend from tests/pools/test_contracts.py): what only a shared server
shows: two writers on one container, O(1) branches, pgvector in ``select``, and the SQLite
version's one-line errors."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from axio_context.embeddings import Embedder, HashingEmbedder, vector_to_blob
from axio_context.pools import (
    ContentEncodeError,
    ContextItem,
    PoolConfigError,
    PoolExistsError,
    PoolKindError,
    PoolNotFoundError,
)
from axio_context.pools.sql import selecting
from axio_context_postgres import Pool, connect
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue, show_pool
from axio_context_postgres.pools.dialect import POSTGRES_POOLS, tsquery_text
from axio_context_postgres.runner import PostgresRunner
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.cli import cli
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue

_names = (f"c{n}" for n in itertools.count())


class PostgresPools:
    """The PostgreSQL queue and pool on one connection pool; ``reopen`` reads one back on a
    second pool, as another process would."""

    def __init__(self, pool: Pool, other: Pool) -> None:
        self.db, self.other = pool, other

    async def queue(self, limit: int, tags: list[str] | None = None) -> PostgresContextQueue[Any]:
        return await PostgresContextQueue.open(self.db, next(_names), limit, tags)

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> PostgresContextPool[Any]:
        return await PostgresContextPool.open(self.db, next(_names), limit, tags, embedder=embedder)

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return await owner.branch(*args, **kwargs)

    async def queue_from_dict(self, data: Mapping[str, Any]) -> PostgresContextQueue[Any]:
        return await PostgresContextQueue.from_dict(self.db, next(_names), data)

    async def pool_from_dict(self, data: Mapping[str, Any]) -> PostgresContextPool[Any]:
        return await PostgresContextPool.from_dict(self.db, next(_names), data)

    async def reopen(self, owner: Any) -> Any:
        kind = PostgresContextQueue if isinstance(owner, PostgresContextQueue) else PostgresContextPool
        return await kind.open(self.other, owner.name)

    async def shown(self, owner: Any) -> Any:
        return msgspec.json.encode(msgspec.to_builtins(await show_pool(self.db, owner.name)))


@pytest.fixture
async def pg_pools(pg_url: str) -> AsyncIterator[PostgresPools]:
    first = await connect(pg_url, min_size=1, max_size=4)
    second = await connect(pg_url, min_size=1, max_size=2)
    try:
        yield PostgresPools(first, second)
    finally:
        await first.close()
        await second.close()


async def test_two_writers_on_one_pool_lose_no_update(pg_pools: PostgresPools) -> None:
    name = next(_names)
    a = await PostgresContextPool.open(pg_pools.db, name)
    b = await PostgresContextPool.open(pg_pools.other, name)

    async def write(p: PostgresContextPool[Any], who: str) -> None:
        for n in range(25):
            await p.add(ContextItem(n, f"{who} {n}", f"{who}{n}"))

    await asyncio.gather(write(a, "a"), write(b, "b"))
    again = await PostgresContextPool.open(pg_pools.db, name)
    assert len(again) == 50 and {i.id for i in again} == {f"{w}{n}" for w in "ab" for n in range(25)}
    await a.refresh()  # whichever wrote last is current already; the other reloads
    assert a.items == again.items


async def test_two_writers_on_one_bounded_queue_keep_the_newest(pg_pools: PostgresPools) -> None:
    name = next(_names)
    a = await PostgresContextQueue.open(pg_pools.db, name, 30)
    b = await PostgresContextQueue.open(pg_pools.other, name, 30)

    async def write(q: PostgresContextQueue[Any], who: str) -> None:
        for n in range(20):
            await q.append(ContextItem(f"{who}{n}"))

    await asyncio.gather(write(a, "a"), write(b, "b"))
    again = await PostgresContextQueue.open(pg_pools.db, name)
    contents = [i.content for i in again]
    assert len(contents) == 30 and len(set(contents)) == 30
    for who in "ab":  # each writer's items stay in its order, the newest kept
        mine = [c for c in contents if c.startswith(who)]
        assert mine == [f"{who}{n}" for n in range(20 - len(mine), 20)]
    await a.refresh()
    assert [i.content for i in a] == contents


async def test_a_branch_writes_one_row_and_copies_no_entry(pg_pools: PostgresPools) -> None:
    db = pg_pools.db
    parent = await pg_pools.pool()
    for n in range(40):
        await parent.add(ContextItem(n, f"item {n}", f"k{n}"))
    entries = await db.fetchval("SELECT COUNT(*) FROM context_pool_entries")
    containers = await db.fetchval("SELECT COUNT(*) FROM context_pools")
    child = await parent.branch(name=f"{parent.name}-child")
    assert await db.fetchval("SELECT COUNT(*) FROM context_pool_entries") == entries
    assert await db.fetchval("SELECT COUNT(*) FROM context_pools") == containers + 1
    await child.add(ContextItem("new", "item new", "k0"))
    assert parent.get("k0").content == 0 and child.get("k0").content == "new"
    assert (await pg_pools.reopen(parent)).get("k0").content == 0
    with pytest.raises(PoolExistsError, match="already exists"):
        await parent.branch(name=child.name)


async def test_select_ranks_by_stemmed_words_and_pgvector(pg_pools: PostgresPools) -> None:
    assert await pg_pools.db.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    p = await pg_pools.pool(embedder=HashingEmbedder(64))
    await p.add(ContextItem(1, "quarterly earnings reports and margins", "earn"))
    await p.add(ContextItem(2, "weekend weather forecast", "wx"))
    await p.add(ContextItem(3, "holiday photos", "pics"))
    assert [i.id for i in await p.select("report", k=1)] == ["earn"]  # stemmed: reports ~ report
    assert (await p.select("forecast!! AND (weather) 'OR' -- ", k=1))[0].id == "wx"  # never a syntax error
    await p.remove("wx")
    assert "wx" not in {i.id for i in await p.select("weather forecast", k=3)}
    other = await PostgresContextPool.open(pg_pools.other, p.name, embedder=HashingEmbedder(64))
    assert (await other.select("earnings margins", k=1))[0].id == "earn"  # embeds what it lacks
    assert tsquery_text("a_b c'd; DROP") == "a | b | c | d | DROP" and tsquery_text("?!") is None


async def test_bad_input_is_refused_in_one_line_and_writes_nothing(pg_pools: PostgresPools) -> None:
    db = pg_pools.db
    q = await PostgresContextQueue.open(db, "bad-q", 3, ["t"])
    with pytest.raises(PoolKindError, match="'bad-q' is a queue, not a pool"):
        await PostgresContextPool.open(db, "bad-q")
    with pytest.raises(PoolConfigError, match="has limit 3, opened with limit 4"):
        await PostgresContextQueue.open(db, "bad-q", 4)
    with pytest.raises(PoolConfigError, match="has tags"):
        await PostgresContextQueue.open(db, "bad-q", 3, ["u"])
    with pytest.raises(PoolNotFoundError, match="no queue or pool named 'nowhere'"):
        await PostgresContextQueue.open(db, "nowhere", 3, create=False)
    with pytest.raises(ValueError, match="creating it needs a limit"):
        await PostgresContextQueue.open(db, "fresh")
    with pytest.raises(ValueError, match="non-empty name"):
        await PostgresContextPool.open(db, " ")
    with pytest.raises(ContentEncodeError, match="item 1 of the append"):
        await q.append(ContextItem(1), ContextItem(object()))
    with pytest.raises(PoolExistsError, match="a queue named 'bad-q' already exists"):
        await PostgresContextQueue.from_dict(db, "bad-q", {"limit": 2, "items": []})
    with pytest.raises(ValueError, match="cannot store this text"):
        await q.append(ContextItem("x", "nul\x00here"))
    assert (await pg_pools.reopen(q)).items == [] and len(q) == 0


async def _fill_cli(queue_open: Any, pool_open: Any) -> None:
    p = await pool_open("docs", limit=10, tags=["work"])
    await p.add(ContextItem({"pages": [1, 2]}, "Q3 earnings report", "q3"))
    await p.add(ContextItem("plain", "notes", "n1"))
    q = await queue_open("recent", limit=3)
    await q.append(*[ContextItem(f"m{i}") for i in range(5)])
    await q.branch(name="recent-sub")


def _cli(db: str, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", db, *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    for info in shown if isinstance(shown, list) else [shown["info"]]:
        info.pop("created_at"), info.pop("updated_at")
    return shown


async def _fill_both(url: str, path: Path) -> None:
    """The same queues and pools in PostgreSQL and in an SQLite file."""
    async with sqlite_connect(path) as conn:
        await _fill_cli(
            lambda *a, **k: SQLiteContextQueue.open(conn, *a, **k),
            lambda *a, **k: SQLiteContextPool.open(conn, *a, **k),
        )
    pool = await connect(url)
    try:
        await _fill_cli(
            lambda *a, **k: PostgresContextQueue.open(pool, *a, **k),
            lambda *a, **k: PostgresContextPool.open(pool, *a, **k),
        )
    finally:
        await pool.close()


def test_the_pools_command_shows_postgres_as_sqlite(fresh_pg_url: str, tmp_path: Path) -> None:
    path = tmp_path / "same.db"
    asyncio.run(_fill_both(fresh_pg_url, path))
    for args in (
        ["pools"],
        ["pools", "--kind", "queue"],
        ["pools", "show", "docs"],
        ["pools", "show", "recent-sub"],
    ):
        assert _cli(fresh_pg_url, *args) == _cli(str(path), *args), args
    assert [i["content"] for i in _cli(fresh_pg_url, "pools", "show", "recent-sub")["items"]] == [
        "m2",
        "m3",
        "m4",
    ]
    result = CliRunner().invoke(
        cli, ["--db", fresh_pg_url, "pools", "show", "nowhere"], catch_exceptions=False
    )
    assert result.exit_code != 0 and result.output.strip().splitlines()[-1].endswith(
        "no queue or pool named 'nowhere'"
    )


async def test_vectors_rank_alike_with_pgvector_and_without(pg_pools: PostgresPools) -> None:
    embedder = HashingEmbedder(32)
    p = await pg_pools.pool(embedder=embedder)
    texts = ["parser errors", "parsing tokens", "garden plan", "tokenizer rules", "weather", "plan a garden"]
    for n, text in enumerate(texts):
        await p.add(ContextItem(n, text, f"k{n}"))
    await p.add(ContextItem("zero", "", "empty"))  # a zero embedding: no distance, left out
    rows = await pg_pools.db.fetch(
        "SELECT e.seq, e.key FROM context_pool_entries e JOIN context_pools c ON c.id = e.owner"
        " WHERE c.name = $1",
        p.name,
    )
    visible = {int(r[0]): str(r[1]) for r in rows}
    for query in ("parser tokens", "a garden plan", "weather"):
        (q,) = await embedder.embed([query])
        exact, indexed = [
            await PostgresRunner(pg_pools.db).read(
                selecting.vector_ranking,
                POSTGRES_POOLS,
                embedder.model,
                vector_to_blob(q),
                -1,
                visible,
                10,
                flag,
            )
            for flag in (False, True)
        ]
        assert exact == indexed and "empty" not in exact and len(exact) == len(texts)
