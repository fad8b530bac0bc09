"""A PostgreSQL database made before expiry (schema step 8, with a vector collection whose
documents table has no TTL columns) upgrades in place: its items stay, never expire, and take a
TTL from then on. (SQLite's upgrade is the migration fixtures' test: tests/fixtures/schema_v16.)"""

from __future__ import annotations

import asyncio

import asyncpg

from axio_context.memory import Document
from axio_context_postgres import connect as pg_connect
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.memory import PostgresBlobStore, PostgresTaskStore, PostgresVectorStore
from axio_context_postgres.migrations import MIGRATIONS

#: The documents table as the vector store made it before expiry.
_OLD_DOCUMENTS = """
CREATE TABLE memory_documents (
    collection bigint NOT NULL REFERENCES memory_collections (id) ON DELETE CASCADE,
    id text NOT NULL,
    content text NOT NULL,
    metadata jsonb NOT NULL,
    embedding vector NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (collection, id)
)
"""


async def _old_database(server: EmbeddedServer) -> str:
    admin = await asyncpg.connect(server.url())
    try:
        await admin.execute("DROP DATABASE IF EXISTS axio_before_expiry WITH (FORCE)")
        await admin.execute("CREATE DATABASE axio_before_expiry TEMPLATE template0")
    finally:
        await admin.close()
    url = server.url("axio_before_expiry")
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE EXTENSION vector")
        await conn.execute(
            "CREATE TABLE axio_schema"
            " (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for step, sql in MIGRATIONS:
            if step <= 8:
                await conn.execute(sql)
                await conn.execute("INSERT INTO axio_schema (version) VALUES ($1)", step)
        await conn.execute(_OLD_DOCUMENTS)
        cid = await conn.fetchval(
            "INSERT INTO memory_collections (name, dimension, embedder, created_at)"
            " VALUES ('kb', 2, '', 0) RETURNING id"
        )
        await conn.execute(
            "INSERT INTO memory_documents (collection, id, content, metadata, embedding, updated_at)"
            " VALUES ($1, 'old', 'before expiry', '{}', '[1,0]', 0)",
            cid,
        )
        await conn.execute("INSERT INTO memory_blob_data (hash, size) VALUES ('\\x01', 1)")
        await conn.execute("INSERT INTO memory_blob_pieces (hash, seq, data) VALUES ('\\x01', 0, 'x')")
        await conn.execute(
            "INSERT INTO memory_blob_keys (key, hash, content_type, created_at)"
            " VALUES ('old', '\\x01', 'text/plain', 0)"
        )
        await conn.execute(
            "INSERT INTO task_lists (id, conversation_id, max_retries, created_at, updated_at)"
            " VALUES ('b1', 'conv', 3, 0, 0)"
        )
    finally:
        await conn.close()
    return url


async def test_a_database_from_before_expiry_upgrades_in_place(pg_server: EmbeddedServer) -> None:
    url = await _old_database(pg_server)
    pool = await pg_connect(url, min_size=1, max_size=2)  # migrates to the current version
    try:
        assert await pool.fetchval("SELECT max(version) FROM axio_schema") == MIGRATIONS[-1][0]
        vectors, blobs, tasks = PostgresVectorStore(pool), PostgresBlobStore(pool), PostgresTaskStore(pool)
        assert [d.id for d in await vectors.get(["old"], collection="kb")] == ["old"]
        assert await blobs.download("old") == (b"x", "text/plain")
        assert (await tasks.get_task_list("b1")) is not None
        assert [await s.count_expired() for s in (vectors, blobs, tasks)] == [0, 0, 0]
        await vectors.add([Document("new", "after", [0.0, 1.0])], collection="kb", ttl=0.001)
        await asyncio.sleep(0.02)
        assert [h.id for h in await vectors.search([0.0, 1.0], collection="kb")] == ["old"]
        assert await vectors.sweep_expired() == 1
        indexes = await pool.fetch("SELECT indexname FROM pg_indexes WHERE indexname LIKE '%expiry'")
        assert sorted(r[0] for r in indexes) == [
            "context_pool_entries_expiry",
            "memory_blob_keys_expiry",
            "memory_documents_expiry",
            "sessions_expiry",
            "task_lists_expiry",
        ]
    finally:
        await pool.close()
