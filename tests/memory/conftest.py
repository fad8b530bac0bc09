"""Fixtures of the memory store tests: a factory per backend."""

from __future__ import annotations

import pytest

from .factories import InMemoryFactory


@pytest.fixture
def memory_factory() -> InMemoryFactory:
    return InMemoryFactory()
