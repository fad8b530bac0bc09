"""The UsageRecorder contract against the memory recorder, and on every registered backend from
the library's fixture (:mod:`axio_context.testing.backends`)."""

from __future__ import annotations

import pytest

from axio_context.context import ContextStore, MemoryContextStore
from axio_context.testing.backends import UsageRecorderOnEveryBackend
from axio_context.usage_limits import MemoryUsageRecorder, UsageRecorder
from axio_context.usage_limits.contract import RecorderFactory, UsageRecorderContract


class _Memory:
    async def new(self) -> UsageRecorder:
        return MemoryUsageRecorder(project="p")

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        assert isinstance(recorder, MemoryUsageRecorder)
        store = MemoryContextStore(session_id=session_id)
        recorder.add_store(store)
        return store


class TestMemoryRecorder(UsageRecorderContract):
    @pytest.fixture
    def factory(self) -> RecorderFactory:
        return _Memory()


class TestUsageRecorder(UsageRecorderOnEveryBackend):
    pass
