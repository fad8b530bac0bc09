"""The ``collections``, ``blobs``, ``graph`` and ``tasks`` commands, and the memory part of
``stats``: real database, CliRunner, ``--json`` parsed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from axio_context.memory import Document, Entity, Relationship, TaskStatus
from axio_context_sqlite import connect
from axio_context_sqlite.memory import (
    SQLiteBlobStore,
    SQLiteGraphStore,
    SQLiteTaskStore,
    SQLiteVectorStore,
)
from tests.support.cli_helpers import invoke, invoke_json


async def _fill(path: Path) -> dict[str, str]:
    async with connect(path) as conn:
        vectors = SQLiteVectorStore(conn)
        await vectors.add(
            [
                Document("doc-b", "second\ndocument", [0.0, 1.0], {"lang": "en"}),
                Document("doc-a", "first", [1.0, 0.0]),
            ],
            collection="kb",
        )
        blobs = SQLiteBlobStore(conn)
        await blobs.upload("logs/a.txt", b"alpha", "text/plain")
        await blobs.upload("logs/b.txt", b"alpha", "text/plain")  # same bytes: stored once
        await blobs.upload("out/report.pdf", b"%PDF" * 100, "application/pdf")
        graph = SQLiteGraphStore(conn)
        await graph.add_entities(
            [Entity("ann", "Person", {"name": "Ann"}), Entity("acme", "Company"), Entity("bob", "Person")]
        )
        await graph.add_relationships(
            [Relationship("w1", "ann", "acme", "WORKS_AT"), Relationship("k1", "bob", "ann", "KNOWS")]
        )
        tasks = SQLiteTaskStore(conn)
        board = await tasks.create_task_list("conv-1", ["plan", "build"], agent_label="Lead")
        await tasks.update_status(board.id, board.tasks[0].id, TaskStatus.SUCCEEDED)
        other = await tasks.create_task_list("conv-2", ["x"], agent_id="helper")
    return {"board": board.id, "other": other.id}


@pytest.fixture
def filled(tmp_path: Path) -> dict[str, str]:
    db = tmp_path / "cli" / "context.db"  # the one $AXIO_CONTEXT_DB names (tests/conftest.py)
    return asyncio.run(_fill(db))


def test_commands_are_listed() -> None:
    out = invoke("--help").stdout
    for command in ("collections", "blobs", "graph", "tasks"):
        assert command in out


def test_collections(filled: dict[str, str]) -> None:
    assert invoke_json("collections", "--json") == [
        {"name": "kb", "dimension": 2, "embedder": "", "documents": 2}
    ]
    assert "kb" in invoke("collections").stdout
    docs = invoke_json("collections", "show", "kb", "--json")
    assert docs == [
        {"id": "doc-a", "content": "first", "metadata": {}},
        {"id": "doc-b", "content": "second\ndocument", "metadata": {"lang": "en"}},
    ]
    assert [d["id"] for d in invoke_json("collections", "show", "kb", "-n", "1", "--json")] == ["doc-a"]
    nl = invoke("collections", "show", "kb", "--nl").stdout.splitlines()
    assert [json.loads(line)["id"] for line in nl] == ["doc-a", "doc-b"]
    assert "second document" in invoke("collections", "show", "kb").stdout
    assert invoke_json("collections", "show", "nothing", "--json") == []


def test_blobs(filled: dict[str, str]) -> None:
    rows = invoke_json("blobs", "--json")
    assert [r["key"] for r in rows] == ["logs/a.txt", "logs/b.txt", "out/report.pdf"]
    assert rows[0] == {
        "key": "logs/a.txt",
        "size": 5,
        "content_type": "text/plain",
        "sha256": "8ed3f6ad685b959ead7022518e1af76cd816f8e8ec7ccdda1ed4018e8f2223f8",
    }
    assert [r["key"] for r in invoke_json("blobs", "--prefix", "logs/", "-n", "1", "--json")] == [
        "logs/a.txt"
    ]
    assert "report.pdf" in invoke("blobs").stdout
    assert invoke_json("blobs", "show", "out/report.pdf", "--json")["size"] == 400
    assert "application/pdf" in invoke("blobs", "show", "out/report.pdf").stdout
    missing = invoke("blobs", "show", "nope", ok=False)
    assert missing.exit_code == 1
    assert missing.stderr.strip() == "Error: no blob under key 'nope'"


def test_graph(filled: dict[str, str]) -> None:
    counts = invoke_json("graph", "--json")
    assert counts == {
        "entities": 3,
        "relationships": 2,
        "entity_types": {"Company": 1, "Person": 2},
        "relationship_types": {"KNOWS": 1, "WORKS_AT": 1},
    }
    assert "WORKS_AT" in invoke("graph").stdout
    assert [e["id"] for e in invoke_json("graph", "entities", "--type", "Person", "--json")] == ["ann", "bob"]
    sub = invoke_json("graph", "show", "acme", "--depth", "2", "--json")
    assert [e["id"] for e in sub["entities"]] == ["acme", "ann", "bob"]
    assert [r["id"] for r in sub["relationships"]] == ["k1", "w1"]
    only = invoke_json("graph", "show", "ann", "--type", "KNOWS", "--json")
    assert [e["id"] for e in only["entities"]] == ["ann", "bob"]
    assert "WORKS_AT" in invoke("graph", "show", "ann").stdout
    missing = invoke("graph", "show", "nobody", ok=False)
    assert (missing.exit_code, missing.stderr.strip()) == (1, "Error: no entity 'nobody'")


def test_tasks(filled: dict[str, str]) -> None:
    boards = invoke_json("tasks", "--json")
    assert {b["id"] for b in boards} == {filled["board"], filled["other"]}
    [one] = invoke_json("tasks", "--conversation", "conv-1", "--json")
    assert (one["tasks"], one["finished"], one["agent_label"]) == (2, 1, "Lead")
    assert "conv-2" in invoke("tasks").stdout
    board = invoke_json("tasks", "show", filled["board"], "--json")
    assert [(t["title"], t["status"]) for t in board["tasks"]] == [
        ("plan", "succeeded"),
        ("build", "planned"),
    ]
    assert "succeeded" in invoke("tasks", "show", filled["board"]).stdout
    missing = invoke("tasks", "show", "nope", ok=False)
    assert (missing.exit_code, missing.stderr.strip()) == (1, "Error: no task board 'nope'")


def test_stats_counts_the_memory_stores(filled: dict[str, str]) -> None:
    mem = invoke_json("stats", "--json")["memory"]
    assert (mem["collections"], mem["documents"]) == (1, 2)
    assert (mem["blob_keys"], mem["blob_bytes"]) == (3, 405)  # "alpha" once, the PDF once
    assert (mem["entities"], mem["relationships"], mem["task_lists"], mem["tasks"]) == (3, 2, 2, 3)
    for size in ("vector_bytes", "blob_key_bytes", "graph_bytes", "task_bytes"):
        assert mem[size] > 0
    out = invoke("stats").stdout
    assert "vectors    2 document(s) in 1 collection(s)" in out
    assert "tasks      3 task(s) on 2 board(s)" in out


def test_a_missing_named_database_is_one_line(tmp_path: Path) -> None:
    result = invoke("--db", tmp_path / "nope.db", "collections", ok=False)
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
