"""Every memory contract suite in memory, and on every registered backend from the library's
fixture (:mod:`axio_context.testing.backends`)."""

from __future__ import annotations

import pytest

from axio_context.memory.testing import (
    BlobStoreContract,
    GraphStoreContract,
    TaskStoreContract,
    VectorStoreContract,
)
from axio_context.testing.backends import (
    BlobStoreOnEveryBackend,
    GraphStoreOnEveryBackend,
    TaskStoreOnEveryBackend,
    VectorStoreOnEveryBackend,
)

from .factories import InMemoryFactory


class TestInMemoryVectors(VectorStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestVectors(VectorStoreOnEveryBackend):
    pass


class TestInMemoryBlobs(BlobStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestBlobs(BlobStoreOnEveryBackend):
    pass


class TestInMemoryGraph(GraphStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestGraph(GraphStoreOnEveryBackend):
    pass


class TestInMemoryTasks(TaskStoreContract):
    @pytest.fixture
    def memory(self, memory_factory: InMemoryFactory) -> InMemoryFactory:
        return memory_factory


class TestTasks(TaskStoreOnEveryBackend):
    pass
