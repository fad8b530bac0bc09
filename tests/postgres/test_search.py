"""Search on PostgreSQL: websearch syntax never errors, HNSW semantic search finds the exact
nearest, hybrid fuses both like SQLite."""

from __future__ import annotations

from axio_context.embeddings import HashingEmbedder
from axio_context.testing import text
from axio_context_postgres import Pool, PostgresContextStore
from axio_context_postgres.database import PostgresDatabase


async def test_keyword_semantic_hybrid(fresh_pg_url: str) -> None:
    from axio_context_postgres import connect

    pool: Pool = await connect(fresh_pg_url)
    try:
        store = PostgresContextStore(pool, "s", project="p")
        await store.append_many(
            [
                text("user", "how do lighthouses guide ships at night"),
                text("assistant", "a rotating lamp and a fresnel lens"),
                text("user", "what about sourdough bread baking"),
            ]
        )
        db = PostgresDatabase(pool, fresh_pg_url)
        for weird in ['"unclosed', "a OR", "-", "NEAR(", "*", "(((", "''"]:
            await db.search(weird, mode="keyword")  # never a syntax error
        hits = await db.search("lighthouses", mode="keyword")
        assert [(h.session_id, h.position) for h in hits.hits] == [("s", 0)]
        assert hits.hits[0].marked().count("[lighthouses]") == 1
        emb = HashingEmbedder(64)
        report = await db.reindex(emb)
        assert report.embedded == 3
        assert (await db.reindex(emb)).embedded == 0  # resumable: nothing left
        sem = await db.search("sourdough bread baking", mode="semantic", embedder=emb)
        assert sem.hits[0].position == 2
        hybrid = await db.search("lighthouses ships", mode="hybrid", embedder=emb)
        assert hybrid.hits[0].position == 0
        assert hybrid.hits[0].keyword_rank == 1
    finally:
        await pool.close()


async def test_hits_of_a_cleared_parent_are_filed_under_the_fork(fresh_pg_url: str) -> None:
    from axio_context_postgres import connect

    pool: Pool = await connect(fresh_pg_url)
    try:
        parent = PostgresContextStore(pool, "parent", project="p")
        await parent.append(text("user", "zeppelins over the harbour"))
        child = await parent.fork()
        await parent.clear()
        db = PostgresDatabase(pool, fresh_pg_url)
        hits = await db.search("zeppelins", mode="keyword")
        assert [(h.session_id, h.position) for h in hits.hits] == [(child.session_id, 0)]
        await db.delete([child.session_id])
        assert (await db.search("zeppelins", mode="keyword")).hits == []
    finally:
        await pool.close()
