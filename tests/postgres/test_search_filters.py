"""Filtered semantic search through the HNSW index still returns ``k`` hits when the matching
messages are far from the query (pgvector's iterative scan), and a raw query filters meaning."""

from __future__ import annotations

import pytest

from axio_context.embeddings import HashingEmbedder
from axio_context.errors import EmbeddingMismatchError, SearchQueryError
from axio_context.testing import text
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.database import PostgresDatabase
from axio_context_postgres.search import Scope, filters


async def test_a_filter_far_from_the_query_still_gets_k_hits(fresh_pg_url: str) -> None:
    emb = HashingEmbedder(64)
    pool = await connect(fresh_pg_url)
    try:
        near = PostgresContextStore(pool, "near", project="near")
        for start in range(0, 600, 300):
            await near.append_many([text("user", f"parser crash {i}") for i in range(start, start + 300)])
        far = PostgresContextStore(pool, "far", project="far")
        await far.append_many([text("assistant", f"tomato garden sunshine parser w{i}") for i in range(15)])
        await PostgresDatabase(pool, fresh_pg_url).reindex(emb)
        # With the statistics at hand the planner often pre-filters exactly (no index, so no
        # recall question); sorting made dear leaves it the HNSW index, the case at stake here.
        name = await pool.fetchval("SELECT current_database()")
        await pool.execute(f'ALTER DATABASE "{name}" SET enable_sort = off')
    finally:
        await pool.close()
    pool = await connect(fresh_pg_url)
    try:
        db = PostgresDatabase(pool, fresh_pg_url)
        async with pool.acquire() as conn, conn.transaction():
            args: list[object] = [[0.1] * 64, 10]
            sql = filters(args, Scope(role="assistant"))
            plan = "\n".join(
                r[0]
                for r in await conn.fetch(
                    "EXPLAIN SELECT 1 FROM embeddings e JOIN messages m ON m.seg = e.seg"
                    " AND m.position = e.position JOIN segments g ON g.seg = m.seg"
                    f" WHERE true {sql} ORDER BY e.embedding <=> $1::vector LIMIT $2",
                    *args,
                )
            )
        assert "embeddings_hnsw" in plan, plan
        hits = await db.search("parser", mode="semantic", role="assistant", embedder=emb)
        assert len(hits) == 10 and {h.session_id for h in hits} == {"far"}
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        unfiltered = await db.search("parser", mode="semantic", embedder=emb)
        assert {h.session_id for h in unfiltered} == {"near"}
        raw = await db.search("tomato NOT w3", mode="semantic", raw=True, embedder=emb, k=20)
        assert {h.session_id for h in raw} == {"far"} and len(raw) == 14
    finally:
        await pool.close()


async def test_a_query_embedder_of_another_width_is_refused(fresh_pg_url: str) -> None:
    pool = await connect(fresh_pg_url)
    try:
        await PostgresContextStore(pool, "s").append(text("user", "parser"))
        db = PostgresDatabase(pool, fresh_pg_url)
        await db.reindex(HashingEmbedder(64))
        for mode in ("semantic", "hybrid"):
            with pytest.raises(EmbeddingMismatchError, match="64"):
                await db.search("parser", mode=mode, embedder=HashingEmbedder(32))
        assert await db.search("parser", mode="keyword", embedder=HashingEmbedder(32))
        with pytest.raises(SearchQueryError, match="invalid FTS5 query"):
            await db.search("parser AND", raw=True)
        with pytest.raises(ValueError, match="k must be"):
            await db.search("parser", k=0)
    finally:
        await pool.close()


async def test_a_large_backlog_is_embedded_then_indexed_in_bulk(fresh_pg_url: str) -> None:
    from axio_context_postgres.searching import BULK_BUILD

    pool = await connect(fresh_pg_url)
    try:
        store = PostgresContextStore(pool, "big")
        await store.append_many([text("user", f"note {i} on topic t{i % 97}") for i in range(BULK_BUILD)])
        db = PostgresDatabase(pool, fresh_pg_url)
        emb = HashingEmbedder(32)
        assert (await db.reindex(emb)).embedded == BULK_BUILD
        status = await db.index_status()
        assert (status.embedded, status.hnsw_index, status.semantic) == (BULK_BUILD, True, "hnsw")
        await store.append(text("user", "a late note on topic t5"))  # a small backlog: inserted
        assert (await db.reindex(emb)).embedded == 1
        hits = await db.search("topic t5", mode="semantic", embedder=emb, k=3)
        assert len(hits) == 3 and hits[0].score > 0.5
    finally:
        await pool.close()
