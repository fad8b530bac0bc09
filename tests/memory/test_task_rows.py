"""Task rows another version wrote, on both backends: a status this version does not know
leaves its board out of listings with a warning naming the row (the other boards still show),
and asking for that board is a one-line TaskStatusError; limits past SQL's integers are clamped."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axio_context.memory.errors import TaskStatusError
from axio_context.memory.tasks_sql import SQLTaskStore, UnreadableTaskWarning
from axio_context_postgres import connect as pg_connect
from axio_context_postgres.memory import PostgresTaskStore
from axio_context_sqlite import connect
from axio_context_sqlite.cli import cli
from axio_context_sqlite.memory import SQLiteTaskStore
from tests.support.postgres import new_database


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite file, or a fresh database on the test session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "tasks.db")
    return new_database(request.getfixturevalue("pg_server"), "axio_tasks")


@asynccontextmanager
async def _store(where: str) -> AsyncIterator[tuple[SQLTaskStore, Any]]:
    """A task store on ``where`` and a function that runs one raw SQL write on its database."""
    if not where.startswith("postgresql://"):
        async with connect(where) as conn:

            async def raw(sql: str, *args: Any) -> None:
                await conn.execute(sql.replace("$1", "?"), args)
                await conn.commit()

            yield SQLiteTaskStore(conn), raw
        return
    pool = await pg_connect(where, min_size=1, max_size=2)
    try:

        async def raw_pg(sql: str, *args: Any) -> None:
            await pool.execute(sql, *args)

        yield PostgresTaskStore(pool), raw_pg
    finally:
        await pool.close()


@pytest.fixture
async def board_store(where: str) -> AsyncIterator[tuple[SQLTaskStore, Any]]:
    async with _store(where) as made:
        yield made


async def test_an_unknown_status_hides_only_its_board_and_names_it(board_store: tuple[Any, Any]) -> None:
    store, raw = board_store
    good = await store.create_task_list("conv-a", ["write tests"])
    bad = await store.create_task_list("conv-b", ["ship it", "celebrate"])
    await raw("UPDATE tasks SET status = 'paused_by_v9' WHERE id = $1", bad.tasks[1].id)
    with pytest.warns(UnreadableTaskWarning, match=f"board {bad.id}: task {bad.tasks[1].id}.*paused_by_v9"):
        boards = await store.list_task_lists()
    assert [b.id for b in boards] == [good.id]
    with pytest.warns(UnreadableTaskWarning, match="paused_by_v9"):
        assert await store.get_boards_by_conversation("conv-b") == []
    with pytest.raises(TaskStatusError, match=f"board {bad.id}: task {bad.tasks[1].id}.*paused_by_v9"):
        await store.get_task_list(bad.id)
    # The row is kept as it came: a later version still reads its status.
    assert await store.get_task_list(good.id) == good


async def test_huge_limits_are_clamped(board_store: tuple[Any, Any]) -> None:
    store, _ = board_store
    made = {(await store.create_task_list(f"conv-{i}", ["t"])).id for i in range(3)}
    assert {b.id for b in await store.list_task_lists(limit=2**64)} == made
    assert {b.id for b in await store.list_task_lists(limit=2**63)} == made
    assert len(await store.list_task_lists(limit=1)) == 1


async def test_the_tasks_command_shows_the_rest_and_names_the_bad_row(where: str) -> None:
    async with _store(where) as (store, raw):
        good = await store.create_task_list("conv-a", ["write tests"])
        bad = await store.create_task_list("conv-b", ["ship \x1b]52;c;eA==\x07"])
        await raw("UPDATE tasks SET status = 'v9\x1b[2J' WHERE id = $1", bad.tasks[0].id)
    result = await asyncio.to_thread(CliRunner().invoke, cli, ["--db", where, "tasks", "--json"])
    assert result.exit_code == 0, result.output
    assert [b["id"] for b in json.loads(result.stdout)] == [good.id]
    assert f"warning: board {bad.id}: task {bad.tasks[0].id} has status 'v9\\x1b[2J'" in result.stderr
    assert "\x1b" not in result.stderr
