"""The layers' contract suites on an encrypted PostgreSQL database: the library's fixture
(:mod:`axio_context.testing.backends`) on PostgreSQL only, with ``$AXIO_CONTEXT_KEY`` set, so
every pool the suites open (the fixture's, and any "other process" one) seals under that key;
the fresh database is marked encrypted on its first open. What is sealed reads back exactly."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context.backends.registry import open_database
from axio_context.encryption import ENV_KEY
from axio_context.memory_blocks import BlockStore
from axio_context.memory_blocks.contract import MemoryBlockContract
from axio_context.testing.backends import (
    BlobStoreOnEveryBackend,
    ContextPoolOnEveryBackend,
    ContextQueueOnEveryBackend,
    ContextStoreOnEveryBackend,
    GraphStoreOnEveryBackend,
    StoredItemsOnEveryBackend,
    StoredStateOnEveryBackend,
    TaskStoreOnEveryBackend,
    VectorStoreOnEveryBackend,
)

KEY = bytes(range(7, 39))


@pytest.fixture
def axio_backend_name() -> str:
    """PostgreSQL only (SQLite's encryption is the whole file: tests/encryption)."""
    return "postgresql"


@pytest.fixture(autouse=True)
def _keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_KEY, KEY.hex())


class TestSessions(ContextStoreOnEveryBackend):
    pass


class TestState(StoredStateOnEveryBackend):
    pass


class TestQueue(ContextQueueOnEveryBackend):
    pass


class TestPool(ContextPoolOnEveryBackend):
    pass


class TestStoredItems(StoredItemsOnEveryBackend):
    pass


class TestVectors(VectorStoreOnEveryBackend):
    pass


class TestBlobs(BlobStoreOnEveryBackend):
    pass


class TestGraph(GraphStoreOnEveryBackend):
    pass


class TestTasks(TaskStoreOnEveryBackend):
    pass


class TestBlocks(MemoryBlockContract):
    @pytest.fixture
    async def blocks(self, axio_database_location: str) -> AsyncIterator[BlockStore]:
        async with open_database(axio_database_location) as db:
            yield db.memory_stores().blocks()
