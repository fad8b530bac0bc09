"""SQLiteContextStore against the shared contract suites, on a real file."""

from __future__ import annotations

from uuid import uuid4

import pytest

from axio_context import ContextStore, Message
from axio_context.testing import CheckpointStoreContract, ContextStoreContract, PopCheckpointContract
from axio_context_sqlite import Connection, SQLiteContextStore


class SQLiteFactory:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def new(self) -> ContextStore:
        return SQLiteContextStore(self.conn, uuid4().hex, project="contract")

    async def from_history(self, history: list[Message]) -> ContextStore:
        return await SQLiteContextStore.from_history(history, conn=self.conn, project="contract")

    async def from_context(self, context: ContextStore) -> ContextStore:
        return await SQLiteContextStore.from_context(context, conn=self.conn, project="contract")


class TestSQLiteContract(ContextStoreContract, CheckpointStoreContract, PopCheckpointContract):
    @pytest.fixture
    def factory(self, conn: Connection) -> SQLiteFactory:
        return SQLiteFactory(conn)
