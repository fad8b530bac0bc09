"""The queue and pool contract suites against both backends: in memory and SQLite."""

from __future__ import annotations

import pytest

from axio_context.pools.testing import ContextPoolContract, ContextQueueContract
from axio_context.pools.testing.stored import StoredItemsContract

from .factories import InMemoryPools, SQLitePools


class TestInMemoryQueue(ContextQueueContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestSQLiteQueue(ContextQueueContract):
    @pytest.fixture
    def pools(self, sqlite_pools: SQLitePools) -> SQLitePools:
        return sqlite_pools


class TestInMemoryPool(ContextPoolContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestSQLitePool(ContextPoolContract):
    @pytest.fixture
    def pools(self, sqlite_pools: SQLitePools) -> SQLitePools:
        return sqlite_pools


class TestInMemoryStoredItems(StoredItemsContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestSQLiteStoredItems(StoredItemsContract):
    @pytest.fixture
    def pools(self, sqlite_pools: SQLitePools) -> SQLitePools:
        return sqlite_pools
