"""Every search command (search with each mode and filter, --raw, -s, similar, reindex, index) on
postgresql:// through the command line, next to the same data in an SQLite file: same commands,
same answers where the two engines agree (which messages match), one-line errors alike."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axio_context.testing import text
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.database import PostgresDatabase
from axio_context_sqlite import Database, SQLiteContextStore
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.cli import cli

MESSAGES = {
    "crash": [
        ("user", "the json parser crashes on nested arrays"),
        ("assistant", "the parser recursion overflows the stack"),
        ("user", "deployed the fix to billing"),
    ],
    "garden": [
        ("user", "tomatoes need sun and water in the garden"),
        ("assistant", "the garden parser of seasons is a joke"),
    ],
}


async def _fill(store_of: Any, db: Any) -> None:
    for sid, msgs in MESSAGES.items():
        store = store_of(sid, "proj-" + sid)
        await store.append_many([text(role, body) for role, body in msgs])
    await db.fork("crash", "crash-fork")
    await store_of("crash-fork", "proj-crash").append(text("user", "the fork talks about parser benchmarks"))


async def _fill_both(url: str, path: Path) -> None:
    pool = await connect(url)
    try:
        db = PostgresDatabase(pool, url)
        await _fill(lambda sid, project: PostgresContextStore(pool, sid, project=project), db)
    finally:
        await pool.close()
    async with sqlite_connect(path) as conn:
        sdb = Database(conn, path)
        await _fill(lambda sid, project: SQLiteContextStore(conn, sid, project=project), sdb)


@pytest.fixture(scope="module")
def dbs(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    path = tmp_path_factory.mktemp("search-cli") / "same.db"
    asyncio.run(_fill_both(pg_url, path))
    for db in (pg_url, str(path)):
        run("--db", db, "reindex")
    return pg_url, str(path)


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def hits(db: str, *args: str) -> list[tuple[str, int]]:
    out = json.loads(run("--db", db, "search", *args, "--json"))
    return [(h["session_id"], h["position"]) for h in out["hits"]]


@pytest.mark.parametrize(
    "args",
    [
        ("parser", "--mode", "keyword"),
        ("--raw", "parser AND crashes", "--mode", "keyword"),
        ("--raw", "parser NOT crashes", "--mode", "keyword"),
        ("--raw", "NEAR(json crashes, 2)", "--mode", "keyword"),
        ("--raw", "parser OR tomatoes", "--mode", "keyword"),
        ("--raw", "deploy*", "--mode", "keyword"),
        ("--raw", '"parser recursion"', "--mode", "keyword"),
        ("parser", "--mode", "keyword", "--role", "assistant"),
        ("parser", "--mode", "keyword", "-p", "proj-garden"),
        ("parser", "--mode", "keyword", "-s", "crash-fork"),
        ("parser", "--mode", "keyword", "-s", "crash"),
        ("--raw", "parser NOT crashes", "--mode", "hybrid", "-s", "crash-fork"),
    ],
)
def test_search_matches_what_sqlite_matches(dbs: tuple[str, str], args: tuple[str, ...]) -> None:
    pg, sqlite = dbs
    assert sorted(hits(pg, *args)) == sorted(hits(sqlite, *args))


def test_session_search_includes_inherited_messages_filed_under_it(dbs: tuple[str, str]) -> None:
    pg, _ = dbs
    assert sorted(hits(pg, "parser", "--mode", "keyword", "-s", "crash-fork")) == [
        ("crash-fork", 0),
        ("crash-fork", 1),
        ("crash-fork", 3),
    ]
    semantic = hits(pg, "parser benchmarks", "--mode", "semantic", "-s", "crash-fork", "-k", "50")
    assert {s for s, _ in semantic} == {"crash-fork"} and ("crash-fork", 3) in semantic
    assert hits(pg, "parser benchmarks", "--mode", "semantic", "-s", "garden", "-k", "50")[0][0] == "garden"


def test_raw_errors_are_one_line_as_on_sqlite(dbs: tuple[str, str]) -> None:
    for query in ["NEAR(parser", '"unterminated', "parser)", "nocolumn:x", "*"]:
        for db in dbs:
            result = CliRunner().invoke(cli, ["--db", db, "search", "--raw", query, "--mode", "keyword"])
            assert result.exit_code == 1, (db, query, result.output)
            assert result.output.startswith(f"Error: invalid FTS5 query {query!r}"), result.output
            assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_similar_and_index(dbs: tuple[str, str]) -> None:
    pg, sqlite = dbs
    out = json.loads(run("--db", pg, "similar", "crash", "-3", "--json", "-k", "3"))
    found = [(h["session_id"], h["position"]) for h in out["hits"]]
    assert ("crash", 0) not in found and len(found) == 3
    assert all(h["semantic_rank"] == i + 1 for i, h in enumerate(out["hits"]))
    same = json.loads(run("--db", sqlite, "similar", "crash", "-3", "--json", "-k", "3"))
    assert found[0] == (same["hits"][0]["session_id"], same["hits"][0]["position"])
    assert json.loads(run("--db", pg, "similar", "crash-fork", "0", "--json"))["hits"]
    assert "has no message 9" in run("--db", pg, "similar", "crash", "9", code=1)
    status = json.loads(run("--db", pg, "index", "--json"))
    assert status["model"] == "axio-hashing-v1" and status["dimension"] == 384
    assert (status["messages"], status["embedded"]) == (6, 6)
    assert status["semantic"] == "hnsw" and status["vector_extension"] is True
    people = run("--db", pg, "index")
    assert "embedded     6 of 6 stored message(s)" in people and "pgvector HNSW" in people


def test_reindex_rebuild_changes_the_width(fresh_pg_url: str) -> None:
    async def fill() -> None:
        pool = await connect(fresh_pg_url)
        try:
            await PostgresContextStore(pool, "s").append_many(
                [text("user", "alpha beta"), text("user", "gamma")]
            )
        finally:
            await pool.close()

    asyncio.run(fill())
    assert (
        run("--db", fresh_pg_url, "reindex")
        == "embedded 2 message(s) with axio-hashing-v1 (384 dimensions)\n"
    )
    assert run("--db", fresh_pg_url, "reindex").startswith("embedded 0 message(s)")
    rebuilt = run("--db", fresh_pg_url, "reindex", "--rebuild", "--dimension", "64")
    assert rebuilt == "re-embedded 2 message(s) with axio-hashing-v1 (64 dimensions)\n"
    assert json.loads(run("--db", fresh_pg_url, "index", "--json"))["dimension"] == 64
    assert hits(fresh_pg_url, "gamma", "--mode", "semantic")[0] == ("s", 1)
    out = run("--db", fresh_pg_url, "similar", "s", "0", "--json")
    assert [h["position"] for h in json.loads(out)["hits"]] in ([1], [])
