"""The UsageRecorder contract against PostgresUsageRecorder on the real server the tests start,
plus what only a server shows: rollups that agree with the rows, one transaction per record,
and many writers racing for one run."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context.context import ContextStore
from axio_context.usage_limits import UsageRecorder
from axio_context.usage_limits.contract import RecorderFactory, UsageRecorderContract
from axio_context_postgres import Pool, PostgresContextStore, connect
from axio_context_postgres.usage import PostgresUsageRecorder

USAGE_TABLES = "usage_records, usage_rollups, usage_runs, sessions, segments, messages, checkpoints"


class _Postgres:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def new(self) -> UsageRecorder:
        await self.pool.execute(f"TRUNCATE {USAGE_TABLES} CASCADE")  # each recorder starts empty
        return PostgresUsageRecorder(self.pool, "p")

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        return PostgresContextStore(self.pool, session_id, "p")


@pytest.fixture
async def pg_pool(pg_url: str) -> AsyncIterator[Pool]:
    pool = await connect(pg_url, min_size=1, max_size=8)
    try:
        yield pool
    finally:
        await pool.close()


class TestPostgresRecorder(UsageRecorderContract):
    @pytest.fixture
    def factory(self, pg_pool: Pool) -> RecorderFactory:
        return _Postgres(pg_pool)
