"""The postgres tests' databases, on the one server of the test session (``pg_server``, from
:mod:`tests.support.postgres`): one database per test module, or per test where a test looks at
the whole database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context_postgres import Pool, connect
from axio_context_postgres.embedded import EmbeddedServer
from tests.support.postgres import new_database


@pytest.fixture(scope="module")
def pg_url(pg_server: EmbeddedServer) -> str:
    """A database of this test module's own."""
    return new_database(pg_server, "axio_test")


@pytest.fixture
def fresh_pg_url(pg_server: EmbeddedServer) -> str:
    """A database of this test's own (for tests that look at the whole database)."""
    return new_database(pg_server, "axio_fresh")


@pytest.fixture
async def pool(pg_url: str) -> AsyncIterator[Pool]:
    p = await connect(pg_url, min_size=1, max_size=4)
    try:
        yield p
    finally:
        await p.close()
