"""The stored-state contract (axio_context.state.contract) on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context.context import ContextStore
from axio_context.state import ResumableState
from axio_context.state.contract import StateFactory, StoredStateContract
from axio_context_postgres import Pool, PostgresContextStore, connect
from axio_context_postgres.state import load_state, save_state


class _Postgres:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def store(self, session_id: str) -> ContextStore:
        return PostgresContextStore(self.pool, session_id, project="p")

    async def save(self, store: ContextStore, state: ResumableState) -> None:
        assert isinstance(store, PostgresContextStore)
        await save_state(store, state)

    async def load(self, store: ContextStore) -> ResumableState | None:
        assert isinstance(store, PostgresContextStore)
        return await load_state(store)


class TestPostgresStoredState(StoredStateContract):
    @pytest.fixture
    async def states(self, pg_url: str) -> AsyncIterator[StateFactory]:
        pool = await connect(pg_url, min_size=1, max_size=4)
        try:
            yield _Postgres(pool)
        finally:
            await pool.close()
