"""Every memory contract suite against both backends: in memory and SQLite."""

from __future__ import annotations

import pytest

from axio_context.memory.testing import (
    BlobStoreContract,
    GraphStoreContract,
    TaskStoreContract,
    VectorStoreContract,
)

from .factories import InMemoryFactory, SQLiteFactory


class TestInMemoryVectors(VectorStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestSQLiteVectors(VectorStoreContract):
    @pytest.fixture
    def memory(self, sqlite_factory: SQLiteFactory) -> SQLiteFactory:
        return sqlite_factory


class TestInMemoryBlobs(BlobStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestSQLiteBlobs(BlobStoreContract):
    @pytest.fixture
    def memory(self, sqlite_factory: SQLiteFactory) -> SQLiteFactory:
        return sqlite_factory


class TestInMemoryGraph(GraphStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestSQLiteGraph(GraphStoreContract):
    @pytest.fixture
    def memory(self, sqlite_factory: SQLiteFactory) -> SQLiteFactory:
        return sqlite_factory


class TestInMemoryTasks(TaskStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestSQLiteTasks(TaskStoreContract):
    @pytest.fixture
    def memory(self, sqlite_factory: SQLiteFactory) -> SQLiteFactory:
        return sqlite_factory
