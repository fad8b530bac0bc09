"""Shared fixtures: every database lives in the test's own tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from axio_context_sqlite import Connection, connect


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "context.db"


@pytest.fixture
async def conn(db_path: Path) -> AsyncIterator[Connection]:
    async with connect(db_path) as connection:
        yield connection
