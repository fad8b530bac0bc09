"""Fixtures of the memory store tests: a factory per backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .factories import InMemoryFactory, SQLiteFactory


@pytest.fixture
def memory_factory() -> InMemoryFactory:
    return InMemoryFactory()


@pytest.fixture
async def sqlite_factory(tmp_path: Path) -> AsyncIterator[SQLiteFactory]:
    factory = SQLiteFactory(tmp_path / "memory.db")
    yield factory
    await factory.close()
