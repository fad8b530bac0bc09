"""The command line on PostgreSQL through the backend protocol (issue 31): what only an SQLite file
can do is one line saying what to use instead (non-zero exit, no traceback), fork ids print at
SQLite's 12 characters, and ``copy`` carries message embeddings both ways (re-embedded where they
arrive): semantic search works on the target."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from axio_context.backends import open_database
from axio_context.testing import text
from axio_context_sqlite.cli import cli


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    ("args", "instead"),
    [
        (["vacuum"], "vacuum is an SQLite-file operation; on PostgreSQL autovacuum runs"),
        (["vacuum", "--recompress"], "recompress is an SQLite-file operation; on PostgreSQL the server"),
        (["backup", "{tmp}/b.db"], "backup is an SQLite-file operation; on PostgreSQL run pg_dump"),
        (["check"], "check is an SQLite-file operation; on PostgreSQL run the server's amcheck"),
        (["doctor"], "check is an SQLite-file operation; on PostgreSQL run the server's amcheck"),
        (["check", "--list-quarantine"], "check is an SQLite-file operation"),
        (["import-axio", "{tmp}/axio.db"], "import-axio is an SQLite-file operation; on PostgreSQL import"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_an_sqlite_only_command_says_what_to_use_instead(
    pg_url: str, tmp_path: Path, args: list[str], instead: str
) -> None:
    (tmp_path / "axio.db").write_bytes(b"")
    result = invoke("--db", pg_url, *[a.format(tmp=tmp_path) for a in args])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"Error: {instead}")
    assert not (tmp_path / "b.db").exists()


async def _root_and_fork(where: str) -> tuple[str, str]:
    async with open_database(where) as db:
        root = db.store("a-root-session-with-a-long-name", project="p")
        await root.append(text("user", "hello"))
        fork = await db.fork(root.session_id)
        await db.store(fork, project="p").append(text("user", "the fork's own"))
        return root.session_id, fork


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_fork_ids_print_at_12_characters_on_both_backends(
    fresh_pg_url: str, tmp_path: Path, backend: str
) -> None:
    where = fresh_pg_url if backend == "postgresql" else str(tmp_path / "forks.db")
    _, fork = asyncio.run(_root_and_fork(where))
    assert len(fork) == 32
    for args in (["list-sessions"], ["list-sessions", "--tree"]):
        table = invoke("--db", where, *args)
        assert table.exit_code == 0, table.output
        assert fork[:12] in table.stdout and fork not in table.stdout, (args, table.stdout)
    listed = json.loads(invoke("--db", where, "list-sessions", "--json").stdout)
    assert fork in {row["session_id"] for row in listed}  # --json keeps the whole id


async def _conversation(where: str) -> None:
    async with open_database(where) as db:
        store = db.store("garden", project="p")
        await store.append_many(
            [
                text("user", "how deep should I plant tulip bulbs"),
                text("assistant", "about three times their height, in autumn"),
                text("user", "and the parser benchmark numbers?"),
            ]
        )


def _semantic(where: str, query: str) -> dict[str, object]:
    result = invoke("--db", where, "search", "--mode", "semantic", "--json", query)
    assert result.exit_code == 0, result.output
    found: dict[str, object] = json.loads(result.stdout)
    return found


@pytest.mark.parametrize("direction", ["sqlite->postgresql", "postgresql->sqlite"])
def test_copy_carries_message_embeddings(fresh_pg_url: str, tmp_path: Path, direction: str) -> None:
    file = str(tmp_path / "garden.db")
    src, dst = (file, fresh_pg_url) if direction.startswith("sqlite") else (fresh_pg_url, file)
    asyncio.run(_conversation(src))
    assert invoke("--db", src, "reindex").exit_code == 0
    before = _semantic(src, "tulip bulbs planting")
    assert before["hits"] and before["not_embedded"] == 0

    copied = invoke("copy", src, dst, "--json")
    assert copied.exit_code == 0, copied.output
    report = json.loads(copied.stdout)
    assert (report["copied"], report["messages"], report["embedded"]) == (1, 3, 3)
    assert report["not_embedded"] is None

    status = json.loads(invoke("--db", dst, "index", "--json").stdout)
    assert (status["messages"], status["embedded"]) == (3, 3)
    after = _semantic(dst, "tulip bulbs planting")
    assert after["not_embedded"] == 0 and after["fallback"] is None
    top = after["hits"][0]  # type: ignore[index]
    assert (top["session_id"], top["position"]) == ("garden", 0)
