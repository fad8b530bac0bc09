"""PostgreSQL's hybrid keyword candidates leave the words found in most messages of a large
database out of the ranking, as SQLite's keyword ranking does (axio_context.search.pruning)."""

from __future__ import annotations

import pytest

from axio_context.search.pruning import common_cap, split_common
from axio_context.testing import text
from axio_context_postgres import Pool, PostgresContextStore
from axio_context_postgres import search as pgsearch
from axio_context_postgres.database import PostgresDatabase


def test_a_word_in_over_half_the_messages_is_common() -> None:
    assert common_cap(100) == 51
    assert split_common(["a", "b", "c"], [51, 50, 0], 100) == (["b", "c"], ["a"])
    assert split_common(["a"], [3], 100) == (["a"], [])


async def test_hybrid_ranks_by_rare_words_then_common_only_newest_first(
    fresh_pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axio_context_postgres import connect

    pool: Pool = await connect(fresh_pg_url)
    try:
        store = PostgresContextStore(pool, "s", project="/p")
        await store.append_many([text("user", f"common note {i}") for i in range(20)])
        await store.append(text("user", "common note about a rare zeppelin"))
        await store.append(text("user", "zeppelin only"))
        db = PostgresDatabase(pool, fresh_pg_url)
        everything = await db.search("common zeppelin", mode="hybrid", k=100)
        assert sorted(h.position for h in everything.hits) == list(range(22))
        monkeypatch.setattr(pgsearch, "PRUNE_MIN_ROWS", 10)
        pruned = (await db.search("common zeppelin", mode="hybrid", k=5)).hits
        assert {h.position for h in pruned[:2]} == {20, 21}
        assert [h.position for h in pruned[2:]] == [19, 18, 17]  # only the common word: newest first
        assert all(h.marked().count("[common]") == 1 for h in pruned[2:])
        assert sorted(
            h.position for h in (await db.search("common zeppelin", mode="hybrid", k=100)).hits
        ) == list(range(22))
        only_common = (await db.search("common", mode="hybrid", k=3)).hits
        assert [h.position for h in only_common] == [20, 19, 18]
    finally:
        await pool.close()
