"""The UsageRecorder contract against the memory recorder and the SQLite recorder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from axio_context.context import ContextStore, MemoryContextStore
from axio_context.usage_limits import MemoryUsageRecorder, UsageRecorder
from axio_context.usage_limits.contract import RecorderFactory, UsageRecorderContract
from axio_context_sqlite import Connection, SQLiteContextStore, connect
from axio_context_sqlite.usage import SQLiteUsageRecorder


class _Memory:
    async def new(self) -> UsageRecorder:
        return MemoryUsageRecorder(project="p")

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        assert isinstance(recorder, MemoryUsageRecorder)
        store = MemoryContextStore(session_id=session_id)
        recorder.add_store(store)
        return store


class _SQLite:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def new(self) -> UsageRecorder:
        return SQLiteUsageRecorder(self.conn, "p")

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        return SQLiteContextStore(self.conn, session_id, "p")


class TestMemoryRecorder(UsageRecorderContract):
    @pytest.fixture
    def factory(self) -> RecorderFactory:
        return _Memory()


class TestSQLiteRecorder(UsageRecorderContract):
    @pytest.fixture
    async def factory(self, tmp_path: Path) -> AsyncIterator[RecorderFactory]:
        async with connect(tmp_path / "usage.db") as conn:
            yield _SQLite(conn)
