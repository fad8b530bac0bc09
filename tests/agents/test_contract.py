"""The HistoryProvider contract against both providers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from axio_context.agents import HistoryProvider, InMemoryHistoryProvider
from axio_context.testing.history import HistoryProviderContract
from axio_context_sqlite import connect
from axio_context_sqlite.agents import SQLiteHistoryProvider


class TestInMemoryHistoryProvider(HistoryProviderContract):
    @pytest.fixture
    def provider(self) -> HistoryProvider:
        return InMemoryHistoryProvider()


class TestSQLiteHistoryProvider(HistoryProviderContract):
    @pytest.fixture
    async def provider(self, tmp_path: Path) -> AsyncIterator[HistoryProvider]:
        async with connect(tmp_path / "agents.db") as conn:
            yield SQLiteHistoryProvider(conn, project="p")
