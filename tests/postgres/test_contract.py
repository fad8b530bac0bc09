"""PostgresContextStore against the shared contract suites, on a real PostgreSQL server."""

from __future__ import annotations

from uuid import uuid4

import pytest

from axio_context import ContextStore, Message
from axio_context.testing import CheckpointStoreContract, ContextStoreContract, PopCheckpointContract
from axio_context_postgres import Pool, PostgresContextStore


class PostgresFactory:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def new(self) -> ContextStore:
        return PostgresContextStore(self.pool, uuid4().hex, project="contract")

    async def from_history(self, history: list[Message]) -> ContextStore:
        return await PostgresContextStore.from_history(history, pool=self.pool, project="contract")

    async def from_context(self, context: ContextStore) -> ContextStore:
        return await PostgresContextStore.from_context(context, pool=self.pool, project="contract")


class TestPostgresContract(ContextStoreContract, CheckpointStoreContract, PopCheckpointContract):
    @pytest.fixture
    def factory(self, pool: Pool) -> PostgresFactory:
        return PostgresFactory(pool)
