"""The memory blocks' contract on every backend, each opened through the registry as the command
line opens it (a SQLite file, a database on the real PostgreSQL server)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context.backends.registry import open_database
from axio_context.memory_blocks import BlockStore
from axio_context.memory_blocks.contract import MemoryBlockContract


class TestMemoryBlocksOnEveryBackend(MemoryBlockContract):
    @pytest.fixture
    async def blocks(self, axio_database_location: str) -> AsyncIterator[BlockStore]:
        async with open_database(axio_database_location) as db:
            yield db.memory_stores().blocks()
