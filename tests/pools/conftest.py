"""Fixtures of the pool tests: a factory per backend."""

from __future__ import annotations

import pytest

from .factories import InMemoryPools


@pytest.fixture
def memory_pools() -> InMemoryPools:
    return InMemoryPools()
