"""`axio-context memory` commands (collections, blobs, graph, tasks) on postgresql:// answer as on
an SQLite file holding the same memory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axio_context.memory import Document, Entity, Relationship
from axio_context_postgres import connect
from axio_context_postgres.memory import PostgresMemoryStores
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.cli import cli
from axio_context_sqlite.memory import SQLiteBlobStore, SQLiteGraphStore, SQLiteTaskStore, SQLiteVectorStore


async def _fill(vectors: Any, blobs: Any, graph: Any, tasks: Any) -> None:
    await vectors.add(
        [Document("a", "parser notes", [1.0, 0.0], {"lang": "en"}), Document("b", "garden", [0.0, 1.0])],
        collection="kb",
    )
    await blobs.upload("reports/a.txt", b"all green", "text/plain")
    await blobs.upload("reports/b.bin", b"\x00" * 2048)
    await graph.add_entities([Entity("ann", "Person", {"age": 40}), Entity("acme", "Company")])
    await graph.add_relationships([Relationship("r1", "ann", "acme", "WORKS_AT", {"since": 2021})])
    board = await tasks.create_task_list("conv-1", ["plan", "build"])
    await tasks.update_status(board.id, board.tasks[0].id, "succeeded", "done")


async def _fill_both(url: str, path: Path) -> None:
    pool = await connect(url)
    try:
        m = PostgresMemoryStores(pool)
        await _fill(m.vectors(), m.blobs(), m.graph(), m.tasks())
    finally:
        await pool.close()
    async with sqlite_connect(path) as c:
        await _fill(SQLiteVectorStore(c), SQLiteBlobStore(c), SQLiteGraphStore(c), SQLiteTaskStore(c))


@pytest.fixture(scope="module")
def both(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The same memory in this module's PostgreSQL database and in an SQLite file."""
    path = tmp_path_factory.mktemp("memory-cli") / "same.db"
    asyncio.run(_fill_both(pg_url, path))
    return pg_url, str(path)


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _anonymous(boards: Any) -> Any:
    """Task boards without what differs by construction: generated ids and times."""
    for b in boards if isinstance(boards, list) else [boards]:
        b.pop("id", None)
        b.pop("created_at", None)
        for t in b["tasks"] if isinstance(b.get("tasks"), list) else []:
            t.pop("id", None)
    return boards


@pytest.mark.parametrize(
    "command",
    [
        ("collections",),
        ("collections", "show", "kb"),
        ("blobs",),
        ("blobs", "--prefix", "reports/a"),
        ("blobs", "show", "reports/a.txt"),
        ("graph",),
        ("graph", "entities"),
        ("graph", "show", "ann"),
        ("tasks",),
        ("tasks", "--conversation", "conv-1"),
    ],
)
def test_memory_commands_answer_as_on_sqlite(
    fresh_pg_url: str, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "same.db"
    asyncio.run(_fill_both(fresh_pg_url, path))
    pg, sqlite = run("--db", fresh_pg_url, *command), run("--db", str(path), *command)
    if command[0] == "tasks":
        pg, sqlite = _anonymous(pg), _anonymous(sqlite)
    assert pg == sqlite
    assert pg  # not two empty answers
