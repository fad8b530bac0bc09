"""Shared fixtures: every database lives in the test's own tmp_path."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from axio_context.testing.backends import axio_backend, axio_backend_name  # noqa: F401  (fixtures)
from axio_context_sqlite import Connection, connect
from tests.support.backends import axio_database_location, backend_pg_url  # noqa: F401  (fixtures)
from tests.support.postgres import pg_server  # noqa: F401  (one PostgreSQL server for every folder)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "context.db"


@pytest.fixture
async def conn(db_path: Path) -> AsyncIterator[Connection]:
    async with connect(db_path) as connection:
        yield connection


@pytest.fixture(autouse=True)
def _isolated_cli_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's default database lives in this test's tmp_path, never the user's."""
    monkeypatch.setenv("AXIO_CONTEXT_DB", str(tmp_path / "cli" / "context.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common umask while inside, so a file's mode shows what the code chose, not the umask."""
    old = os.umask(0o022)
    yield
    os.umask(old)
