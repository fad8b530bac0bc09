"""Schema versions, bad input and connection failures: each a named one-line error."""

from __future__ import annotations

import asyncpg
import pytest

from axio_context.errors import SchemaVersionError
from axio_context.testing import text
from axio_context_postgres import (
    ConnectionLostError,
    PostgresContextStore,
    PostgresURLError,
    ServerUnavailableError,
    VectorExtensionMissingError,
    connect,
)
from axio_context_postgres.connection import Pool, translated
from axio_context_postgres.database import PostgresDatabase
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.schema import SCHEMA_VERSION


async def test_newer_schema_is_refused(fresh_pg_url: str) -> None:
    conn = await asyncpg.connect(fresh_pg_url)
    try:
        await conn.execute("INSERT INTO axio_schema (version) VALUES ($1)", SCHEMA_VERSION + 1)
    finally:
        await conn.close()
    with pytest.raises(SchemaVersionError, match=f"version {SCHEMA_VERSION + 1}, newer"):
        await connect(fresh_pg_url)


async def test_empty_database_gets_the_schema(pg_server: EmbeddedServer) -> None:
    admin = await asyncpg.connect(pg_server.url())
    try:
        await admin.execute("CREATE DATABASE axio_blank TEMPLATE template0")
    finally:
        await admin.close()
    pool = await connect(pg_server.url("axio_blank"))
    try:
        assert await pool.fetchval("SELECT MAX(version) FROM axio_schema") == SCHEMA_VERSION
    finally:
        await pool.close()


async def test_bad_url_and_down_server() -> None:
    with pytest.raises(PostgresURLError):
        await connect("postgresql://u@h:port/db")
    with pytest.raises(ServerUnavailableError, match="cannot reach"):
        await connect("postgresql://postgres@/postgres?host=/nonexistent-axio-dir", connect_timeout=2)


async def test_connection_dropped_mid_transaction(pool: Pool, pg_url: str) -> None:
    store = PostgresContextStore(pool, "dropped", project="x")
    await store.append(text("user", "kept"))
    victim = await asyncpg.connect(pg_url)
    try:
        tx = victim.transaction()
        await tx.start()
        await victim.execute("UPDATE sessions SET next_position = next_position + 1 WHERE id = 'dropped'")
        admin = await asyncpg.connect(pg_url)
        try:
            await admin.execute("SELECT pg_terminate_backend($1)", victim.get_server_pid())
        finally:
            await admin.close()
        with pytest.raises(ConnectionLostError, match=r"rolled back|closed"):
            async with translated("test"):
                await victim.execute("INSERT INTO axio_settings VALUES ('half', 'written')")
    finally:
        victim.terminate()
    assert [m.content for m in await store.get_full_history()] == [text("user", "kept").content]
    assert (await store.info()).message_count == 1
    assert await pool.fetchval("SELECT count(*) FROM axio_settings WHERE key = 'half'") == 0


async def test_without_vector_extension_search_says_how(pg_server: EmbeddedServer) -> None:
    admin = await asyncpg.connect(pg_server.url())
    try:
        await admin.execute("CREATE ROLE plain LOGIN")
        await admin.execute("CREATE DATABASE axio_novec TEMPLATE template0 OWNER postgres")
    finally:
        await admin.close()
    owner = await asyncpg.connect(pg_server.url("axio_novec"))
    try:
        await owner.execute("GRANT ALL ON SCHEMA public TO plain")
    finally:
        await owner.close()
    url = pg_server.url("axio_novec", user="plain")
    pool = await connect(url)  # no privilege to create the extension: everything else works
    try:
        store = PostgresContextStore(pool, "nv", project="x")
        await store.append(text("user", "lighthouses guide ships"))
        db = PostgresDatabase(pool, url)
        hits = await db.search("lighthouses", mode="keyword")
        assert [h.session_id for h in hits.hits] == ["nv"]
        with pytest.raises(VectorExtensionMissingError, match="CREATE EXTENSION vector"):
            await db.search("lighthouses", mode="semantic")
    finally:
        await pool.close()
