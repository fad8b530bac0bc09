"""Fixtures of the pool tests: a factory per backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .factories import InMemoryPools, SQLitePools


@pytest.fixture
def memory_pools() -> InMemoryPools:
    return InMemoryPools()


@pytest.fixture
async def sqlite_pools(tmp_path: Path) -> AsyncIterator[SQLitePools]:
    factory = SQLitePools(tmp_path / "pools.db")
    yield factory
    await factory.close()
