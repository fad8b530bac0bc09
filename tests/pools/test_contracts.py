"""The queue and pool contract suites in memory and on SQLite (PostgreSQL: tests/postgres)."""

from __future__ import annotations

import pytest

from axio_context.pools.testing import ContextPoolContract, ContextQueueContract
from axio_context.pools.testing.stored import StoredItemsContract
from axio_context.pools.testing.writers import SharedWritersContract

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


class TestInMemorySharedWriters(SharedWritersContract):
    @pytest.fixture
    def pools(self, memory_pools: InMemoryPools) -> InMemoryPools:
        return memory_pools


class TestSQLiteSharedWriters(SharedWritersContract):
    @pytest.fixture
    def pools(self, sqlite_pools: SQLitePools) -> SQLitePools:
        return sqlite_pools
