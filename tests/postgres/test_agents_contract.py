"""The HistoryProvider contract against the PostgreSQL provider, on the real server the tests
start; each test begins with the agent tables and sessions emptied."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context.agents import HistoryProvider
from axio_context.testing.history import HistoryProviderContract
from axio_context_postgres import connect
from axio_context_postgres.agents import PostgresHistoryProvider


class TestPostgresHistoryProvider(HistoryProviderContract):
    @pytest.fixture
    async def provider(self, pg_url: str) -> AsyncIterator[HistoryProvider]:
        pool = await connect(pg_url, min_size=1, max_size=4)
        try:
            await pool.execute(
                "TRUNCATE hidden_messages, message_runs, agent_runs, agent_sessions,"
                " checkpoints, messages, sessions, segments CASCADE"
            )
            yield PostgresHistoryProvider(pool, project="p")
        finally:
            await pool.close()
