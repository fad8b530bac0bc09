"""Bad input to the PostgreSQL memory stores: text PostgreSQL cannot store is a ValueError and
nothing is written; without pgvector the vector store says how to enable it and the others work."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from axio_context.memory import Document, Entity
from axio_context_postgres import VectorExtensionMissingError, connect
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.memory import (
    PostgresBlobStore,
    PostgresGraphStore,
    PostgresTaskStore,
    PostgresVectorStore,
)


async def test_text_postgres_cannot_store_is_refused_whole(fresh_pg_url: str) -> None:
    pool = await connect(fresh_pg_url)
    try:
        vectors = PostgresVectorStore(pool)
        for bad in (
            Document("b", "nul \x00 inside", [1.0, 0.0]),
            Document("b", "x", [1.0, 0.0], {"k": "\x00"}),
        ):
            with pytest.raises(ValueError, match="cannot store this text"):
                await vectors.add([Document("a", "fine", [0.0, 1.0]), bad])
            assert await vectors.get(["a", "b"]) == []
        graph = PostgresGraphStore(pool)
        with pytest.raises(ValueError, match="cannot store this text"):
            await graph.add_entities([Entity("ok", "T"), Entity("bad", "T", {"p": "a\x00b"})])
        assert await graph.get_entity("ok") is None
        tasks = PostgresTaskStore(pool)
        with pytest.raises(ValueError, match="cannot store this text"):
            await tasks.create_task_list("conv", ["fine", "nul \x00"])
        assert await tasks.list_task_lists() == []
    finally:
        await pool.close()


async def test_without_pgvector_only_vectors_refuse(pg_server: EmbeddedServer) -> None:
    admin = await asyncpg.connect(pg_server.url())
    try:
        await admin.execute("CREATE ROLE memplain LOGIN")
        await admin.execute("CREATE DATABASE axio_memnovec TEMPLATE template0 OWNER postgres")
    finally:
        await admin.close()
    owner = await asyncpg.connect(pg_server.url("axio_memnovec"))
    try:
        await owner.execute("GRANT ALL ON SCHEMA public TO memplain")
    finally:
        await owner.close()
    pool = await connect(pg_server.url("axio_memnovec", user="memplain"))
    try:
        with pytest.raises(VectorExtensionMissingError, match="CREATE EXTENSION vector"):
            await PostgresVectorStore(pool).add([Document("a", "x", [1.0])])
        assert await PostgresVectorStore(pool).list_collections() == []
        assert await PostgresVectorStore(pool).search([1.0]) == []
        blobs = PostgresBlobStore(pool)
        await blobs.upload("k", b"bytes")
        assert await blobs.download("k") == (b"bytes", "application/octet-stream")
        await PostgresGraphStore(pool).add_entities([Entity("e", "T")])
        assert (await PostgresTaskStore(pool).create_task_list("c", ["t"])).tasks[0].title == "t"
    finally:
        await pool.close()


async def test_a_collection_id_reused_after_restart_identity_gets_its_own_index(pool: Any) -> None:
    """TRUNCATE ... RESTART IDENTITY empties the collections but not their partial HNSW indexes;
    a new collection that takes an old id (another dimension) is stored and searched."""
    store = PostgresVectorStore(pool)
    await store.add([Document("a", "three", [1.0, 0.0, 0.0])], collection="first")
    await pool.execute("TRUNCATE memory_documents, memory_collections RESTART IDENTITY CASCADE")
    await store.add([Document("b", "two", [0.0, 1.0])], collection="second")
    assert [r.id for r in await store.search([0.0, 1.0], collection="second")] == ["b"]
