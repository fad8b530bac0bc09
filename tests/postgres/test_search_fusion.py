"""PostgreSQL's hybrid search ranks as SQLite's does: the same corpus, embedder and queries give
the same hits in the same order with the same fused scores, because both weigh the keyword
ranking by how much of the query its hits hold (IDF coverage) and the semantic one by how far its
nearest message stands out (axio_context_sqlite/search/hits.py ``fusion_weights``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from axio_context import Message
from axio_context.embeddings import Embedder, HashingEmbedder
from axio_context.testing import text
from axio_context_postgres import Pool, PostgresContextStore, connect
from axio_context_postgres.database import PostgresDatabase
from axio_context_sqlite import SQLiteContextStore
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.database import Database
from axio_context_sqlite.search.hits import FUSION_K, SearchResults
from axio_context_sqlite.search.ranking import reciprocal_rank_fusion

EMB = HashingEmbedder()

CORPUS = [
    text("user", "the kubelet on node seven keeps restarting"),
    text("assistant", "the parser crashed while reading configs with tabs"),
    text("user", "what about sourdough bread baking at home"),
    text("assistant", "sourdough needs a starter fed every day"),
    text("user", "deploy the billing service to staging"),
    text("assistant", "the billing service health endpoint returns 503 on staging"),
    text("user", "lighthouses guide ships at night with a rotating lamp"),
    text("assistant", "the config file uses tabs for indentation"),
    text("user", "rollback the deploy if the health check fails"),
]

QUERIES = [
    "kubelet",  # an identifier held whole by one message
    "billing staging",  # the whole query held by two messages
    "kubelet eviction",  # a part of it held: the keyword ranking weighs little
    "indentation parser crashed",  # parts held by two messages, the nearest stands out
    "billing service eviction",
    "deploy health",
]
# Words in the form they are stored in: SQLite's keyword index stems (porter), PostgreSQL's
# 'simple' configuration does not, so "parsers" finds "parser" on SQLite only.


def _order(results: SearchResults) -> list[tuple[int, int | None, int | None]]:
    return [(h.position, h.keyword_rank, h.semantic_rank) for h in results.hits]


@asynccontextmanager
async def stored_in_both(
    path: Path, url: str, corpus: list[Message], embedder: Embedder
) -> AsyncIterator[tuple[Database, PostgresDatabase]]:
    """``corpus`` in a SQLite file and in a PostgreSQL database, embedded by ``embedder``."""
    pool: Pool = await connect(url)
    try:
        async with sqlite_connect(path) as conn:
            await SQLiteContextStore(conn, "s", "/p", embedder=embedder).append_many(corpus)
            await PostgresContextStore(pool, "s", project="/p").append_many(corpus)
            pg = PostgresDatabase(pool, url)
            assert (await pg.reindex(embedder)).embedded == len(corpus)
            yield Database(conn, path), pg
    finally:
        await pool.close()


@pytest.fixture
async def both(tmp_path: Path, fresh_pg_url: str) -> AsyncIterator[tuple[Database, PostgresDatabase]]:
    """The corpus in a SQLite file and in a PostgreSQL database, embedded by the same embedder."""
    async with stored_in_both(tmp_path / "fusion.db", fresh_pg_url, CORPUS, EMB) as pair:
        yield pair


@pytest.mark.parametrize("query", QUERIES)
async def test_hybrid_order_and_scores_match_sqlite(
    both: tuple[Database, PostgresDatabase], query: str
) -> None:
    """The same hits, ranks and fused scores: the score of a hit is each ranking's weight over
    60 + its rank there, so equal scores mean equal weights (the tolerance is SQLite's int8
    embeddings against PostgreSQL's float32 ones: similarities within about 1e-3)."""
    lite, pg = both
    want = await lite.search(query, mode="hybrid", embedder=EMB, k=10)
    got = await pg.search(query, mode="hybrid", embedder=EMB, k=10)
    assert want.hits, query
    assert _order(got) == _order(want)
    assert [h.score for h in got.hits] == pytest.approx([h.score for h in want.hits], rel=1e-2)


async def test_the_weights_flip_the_order_where_sqlites_do(both: tuple[Database, PostgresDatabase]) -> None:
    """ "lamp" alone (a third of the query, a common-ish word) is a weak keyword hit: SQLite's weights
    put meaning's third neighbour above it, where equal-weight fusion of the same two rankings would
    not; PostgreSQL does the same."""
    lite, pg = both
    query = "sourdough bread lamp"
    want = await lite.search(query, mode="hybrid", embedder=EMB, k=10)
    got = await pg.search(query, mode="hybrid", embedder=EMB, k=10)

    # (the keyword ranks of the two bread messages differ: bm25 and ts_rank_cd weigh length apart)
    def placed(r: SearchResults) -> list[tuple[int, int | None]]:
        return [(h.position, h.semantic_rank) for h in r.hits]

    assert placed(got) == placed(want)
    # the keyword-only hit (the lamp message) comes below the semantic-only one ...
    positions = [h.position for h in got.hits]
    assert positions.index(6) > positions.index(1)
    assert got.hits[positions.index(6)].semantic_rank is None
    assert got.hits[positions.index(1)].keyword_rank is None
    # ... where plain reciprocal rank fusion of PostgreSQL's own two rankings puts it above
    kw = [h.position for h in sorted(got.hits, key=lambda h: h.keyword_rank or 99) if h.keyword_rank]
    sem = [h.position for h in sorted(got.hits, key=lambda h: h.semantic_rank or 99) if h.semantic_rank]
    plain = [f.key for f in reciprocal_rank_fusion([kw, sem], k=FUSION_K)]
    assert plain.index(6) < plain.index(1)


async def test_a_raw_query_fuses_unweighted_as_on_sqlite(both: tuple[Database, PostgresDatabase]) -> None:
    """A raw query has no terms to weigh: both backends fuse it with equal weights."""
    lite, pg = both
    want = await lite.search("billing AND staging", mode="hybrid", raw=True, embedder=EMB, k=10)
    got = await pg.search("billing AND staging", mode="hybrid", raw=True, embedder=EMB, k=10)
    assert _order(got) == _order(want)
    assert [h.score for h in got.hits] == pytest.approx([h.score for h in want.hits], rel=1e-2)


MEANING = [
    text("user", "memoize the responses to frequent questions so they are served instantly"),
    text("assistant", "the cache directory is common to all users on the machine"),
    text("user", "answers to the quiz are kept in a common cache of paper sheets"),
    text("assistant", "clear the browser cache and reload the page"),
    text("user", "common lisp has good answers for macros"),
    text("assistant", "the kubelet on node seven keeps restarting"),
    text("user", "sourdough needs a starter fed every day"),
]


async def test_a_meaning_level_embedder_fuses_by_score_on_both(tmp_path: Path, fresh_pg_url: str) -> None:
    """With all-MiniLM-L6-v2 (a meaning-level embedder) both backends fuse by score
    (hits.blend: keyword's share of the best keyword score, meaning's of the nearest cosine), not
    by rank: the same hits in the same order, with scores on the 0-to-1 scale of the blend."""
    from axio_context.onnx_minilm import OnnxMiniLMEmbedder

    emb = await OnnxMiniLMEmbedder.load()
    async with stored_in_both(tmp_path / "meaning.db", fresh_pg_url, MEANING, emb) as (lite, pg):
        for query in ("reuse replies to repeated questions", "restarting kubelet"):
            want = await lite.search(query, mode="hybrid", embedder=emb, k=5)
            got = await pg.search(query, mode="hybrid", embedder=emb, k=5)
            assert _order(got) == _order(want)
            assert [h.score for h in got.hits] == pytest.approx([h.score for h in want.hits], rel=2e-2)
            assert want.hits[0].score > 0.5  # by rank, a hit scores at most 2 / 61
        # where the keyword scorers order the hits apart (bm25 puts the Lisp message first,
        # ts_rank_cd the quiz one), the fused lists differ there, and agree on the rest
        want = await lite.search("cache common answers", mode="hybrid", embedder=emb, k=5)
        got = await pg.search("cache common answers", mode="hybrid", embedder=emb, k=5)
        assert want.hits[0].position == got.hits[0].position == 2
        assert {h.position for h in want.hits} == {h.position for h in got.hits}


async def test_weak_meaning_alone_is_withheld_on_both(both: tuple[Database, PostgresDatabase]) -> None:
    """No message holds any word of the query and the embedder is the lexical one: both backends
    show nothing and count what meaning found (``withheld``); a word held somewhere shows hits."""
    lite, pg = both
    want = await lite.search("parsnipology zeugma", mode="hybrid", embedder=EMB, k=10)
    got = await pg.search("parsnipology zeugma", mode="hybrid", embedder=EMB, k=10)
    assert want.hits == [] and got.hits == []
    assert want.withheld > 0 and got.withheld > 0
    assert any("semantic mode shows" in n for n in got.notes())
    shown = await pg.search("parsnipology kubelet", mode="hybrid", embedder=EMB, k=10)
    assert shown.hits and shown.withheld == 0
    semantic = await pg.search("parsnipology zeugma", mode="semantic", embedder=EMB, k=10)
    assert len(semantic.hits) == got.withheld
