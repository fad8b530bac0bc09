"""The bridges' tests: openai-agents without tracing exports or a real key (no network here),
and ``backend``: each test's database on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from axio_context_postgres.embedded import EmbeddedServer
from tests.support.backends import NAMES, Backend
from tests.support.postgres import new_database


@pytest.fixture(scope="session", autouse=True)
def _no_tracing_export() -> None:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    os.environ.setdefault("OPENAI_API_KEY", "test_key")  # clients built but never called


@pytest.fixture(scope="module")
def bridges_pg_url(pg_server: EmbeddedServer) -> str:
    """A PostgreSQL database of this test module's own (emptied for each test)."""
    return new_database(pg_server, "axio_bridges")


@pytest.fixture(params=NAMES)
def backend_db(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The test's database on each backend in turn: SQLite, then the real PostgreSQL server."""
    url = request.getfixturevalue("bridges_pg_url") if request.param == "postgres" else None
    return Backend.make(request.param, tmp_path, url)


@pytest.fixture
async def backend(backend_db: Backend) -> AsyncIterator[Backend]:
    """``backend_db``, open for the test."""
    async with backend_db.open():
        yield backend_db
