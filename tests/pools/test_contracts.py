"""The queue and pool contract suites in memory, and on every registered backend from the
library's fixture (:mod:`axio_context.testing.backends`)."""

from __future__ import annotations

import pytest

from axio_context.pools.testing import ContextPoolContract, ContextQueueContract
from axio_context.pools.testing.stored import StoredItemsContract
from axio_context.pools.testing.writers import SharedWritersContract
from axio_context.testing.backends import (
    ContextPoolOnEveryBackend,
    ContextQueueOnEveryBackend,
    SharedWritersOnEveryBackend,
    StoredItemsOnEveryBackend,
)

from .factories import InMemoryPools


class TestInMemoryQueue(ContextQueueContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestQueue(ContextQueueOnEveryBackend):
    pass


class TestInMemoryPool(ContextPoolContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestPool(ContextPoolOnEveryBackend):
    pass


class TestInMemoryStoredItems(StoredItemsContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestStoredItems(StoredItemsOnEveryBackend):
    pass


class TestInMemorySharedWriters(SharedWritersContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestSharedWriters(SharedWritersOnEveryBackend):
    pass
