"""The stored-state contract (axio_context.state.contract) on SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from axio_context.context import ContextStore
from axio_context.state import ResumableState
from axio_context.state.contract import StateFactory, StoredStateContract
from axio_context_sqlite import Connection, SQLiteContextStore, connect
from axio_context_sqlite.state import load_state, save_state


class _SQLite:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def store(self, session_id: str) -> ContextStore:
        return SQLiteContextStore(self.conn, session_id, project="p")

    async def save(self, store: ContextStore, state: ResumableState) -> None:
        assert isinstance(store, SQLiteContextStore)
        await save_state(store, state)

    async def load(self, store: ContextStore) -> ResumableState | None:
        assert isinstance(store, SQLiteContextStore)
        return await load_state(store)


class TestSQLiteStoredState(StoredStateContract):
    @pytest.fixture
    async def states(self, tmp_path: Path) -> AsyncIterator[StateFactory]:
        async with connect(tmp_path / "state.db") as conn:
            yield _SQLite(conn)
