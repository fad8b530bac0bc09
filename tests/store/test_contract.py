"""The ContextStore, checkpoint and pop contract suites on every registered backend (a real
SQLite file, the real PostgreSQL server), from the library's fixture
(:mod:`axio_context.testing.backends`)."""

from __future__ import annotations

from axio_context.testing.backends import ContextStoreOnEveryBackend


class TestContextStore(ContextStoreOnEveryBackend):
    pass
