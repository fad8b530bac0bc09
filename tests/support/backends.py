"""One database on either backend, for tests that must hold on both: a SQLite file in the test's
``tmp_path`` or a fresh PostgreSQL database on the session's real server (``pg_server``).

Everything goes through the library's registry (:mod:`axio_context.backends.registry`), as the
command line and the bridges do: ``Backend.open()`` gives what the backend's stores take (its
connection or pool), ``store()`` a session of it, ``recorder()`` a usage recorder on it,
``search()`` what ``axio-context search`` finds, ``where`` the path or URL another process (or
``axio-context --db``) opens. Only the servers are this module's own.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from axio_context.backends import registry
from axio_context.context import ContextStore
from axio_context.search.results import SearchHit
from axio_context.usage_limits import UsageRecorder
from axio_context_postgres.embedded import EmbeddedServer

from .postgres import create_database, emptied, new_database

NAMES = ("sqlite", "postgres")

#: A backend's connection or pool (what its stores take).
Handle = Any
Store = ContextStore


class Backend:
    """One test's database on one backend, and the handle open on it (after :meth:`open`)."""

    def __init__(self, name: str, where: str) -> None:
        self.name = name
        self.where = where
        self._handle: Handle | None = None

    @classmethod
    def make(cls, name: str, tmp_path: Path, url: str | None) -> Backend:
        """A file in ``tmp_path``, or the PostgreSQL database at ``url`` emptied for this test."""
        if name == "sqlite":
            return cls(name, str(tmp_path / "bridges.db"))
        assert url is not None
        return cls(name, emptied(url))

    @property
    def handle(self) -> Handle:
        assert self._handle is not None, "open() first"
        return self._handle

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Handle]:
        """The backend's connection or pool for the block; closed after it."""
        outer = self._handle  # a nested open (a "restart") gives the outer one back after it
        handle = await registry.connect(self.where)
        self._handle = handle
        try:
            yield handle
        finally:
            self._handle = outer
            await handle.close()

    def store(self, session_id: str, project: str | None = None) -> Store:
        """A session of the open database."""
        return registry.backend_of(self.handle).context_store(self.handle, session_id, project)

    def recorder(self, store: Store) -> UsageRecorder:
        """A usage recorder on the open database (the one ``store`` is in)."""
        return registry.backend_of(self.handle).usage_recorder(self.handle)

    async def search(self, query: str, **options: Any) -> list[SearchHit]:
        """What ``axio-context search`` finds in the database."""
        async with registry.open_database(self.where, create=False) as db:
            return list(await db.search(query, **options))


# The fixtures a folder's conftest imports to run its tests on both backends.


@pytest.fixture(scope="module")
def backend_pg_url(pg_server: EmbeddedServer) -> str:
    """A PostgreSQL database of this test module's own (emptied for each test)."""
    return new_database(pg_server, "axio_backend")


@pytest.fixture
def axio_database_location(
    axio_backend_name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[str]:
    """The library's contract fixture (:mod:`axio_context.testing.backends`) on this suite's
    servers: a file in ``tmp_path``, or a database of its own on the real PostgreSQL server,
    copied from the migrated template and dropped after the test (a truncated one keeps what
    TRUNCATE does not reach: a collection's partial index, for one)."""
    if axio_backend_name == "sqlite":
        yield str(tmp_path / "contract.db")
        return
    assert axio_backend_name == "postgresql", axio_backend_name
    server: EmbeddedServer = request.getfixturevalue("pg_server")
    name = f"axio_contract_{next(_contract_numbers)}"
    url = asyncio.run(create_database(server, name))
    yield url
    asyncio.run(_drop(server, name))


_contract_numbers = itertools.count()


async def _drop(server: EmbeddedServer, name: str) -> None:
    conn = await asyncpg.connect(server.url())
    try:
        await conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
    finally:
        await conn.close()


@pytest.fixture(params=NAMES)
def backend_db(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The test's database on each backend in turn: SQLite, then the real PostgreSQL server."""
    url = request.getfixturevalue("backend_pg_url") if request.param == "postgres" else None
    return Backend.make(request.param, tmp_path, url)


@pytest.fixture
async def backend(backend_db: Backend) -> AsyncIterator[Backend]:
    """``backend_db``, open for the test."""
    async with backend_db.open():
        yield backend_db
