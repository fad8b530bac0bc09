"""A fresh machine is not an error (issue 31, "what a new user hit"): with no database yet,
``stats``, ``search``, ``show`` and ``usage`` say "no sessions yet (database: ...)" and exit 0, as
``list-sessions`` does, and create nothing; a database someone named (``--db``) that is missing
stays an error. An empty PostgreSQL database is the same: ``show`` says so and exits 0."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from axio_context_postgres.embedded import EmbeddedServer
from axio_context_sqlite import connect
from axio_context_sqlite.cli import cli
from tests.support.postgres import new_database

#: The commands that read a database and found none an error.
COMMANDS = [["stats"], ["search", "hello"], ["show"], ["usage"]]


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No database named anywhere, and none in the user data folder: the default one to be."""
    monkeypatch.delenv("AXIO_CONTEXT_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "axio-context" / "context.db"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_fresh_machine_has_no_sessions_yet(fresh: Path, args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert f"no sessions yet (database: {fresh})" in result.output
    assert "Traceback" not in result.output
    assert not fresh.exists() and not fresh.parent.exists()  # reading created nothing


def test_the_json_of_a_fresh_machine_is_the_shape_of_an_empty_database(fresh: Path) -> None:
    stats = invoke("stats", "--json")
    assert stats.exit_code == 0, stats.output
    doc = json.loads(stats.stdout)
    assert doc["path"] == str(fresh)
    assert (doc["sessions"], doc["messages"], doc["vectors"], doc["by_project"]) == (0, 0, 0, [])

    search = invoke("search", "--json", "hello")
    assert search.exit_code == 0, search.output
    assert json.loads(search.stdout)["hits"] == []

    usage = invoke("usage", "--json")
    assert usage.exit_code == 0, usage.output
    assert json.loads(usage.stdout) == []

    show = invoke("show", "--json")
    assert show.exit_code == 0, show.output
    assert json.loads(show.stdout) is None
    assert not fresh.exists()


def test_a_session_asked_for_by_name_on_a_fresh_machine_is_an_error(fresh: Path) -> None:
    result = invoke("show", "abc123")
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "no session" in result.output and str(fresh) in result.output


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_named_database_that_is_missing_stays_an_error(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "typo.db"
    result = invoke("--db", str(missing), *args)
    assert result.exit_code == 1
    assert f"no database at {missing}" in result.output
    assert not missing.exists()


async def _schema_only(path: Path) -> None:
    async with connect(path):
        pass


def test_show_on_an_empty_database_says_so(tmp_path: Path) -> None:
    empty_file, schema_only = tmp_path / "empty.db", tmp_path / "schema.db"
    empty_file.touch()
    asyncio.run(_schema_only(schema_only))
    for db in (empty_file, schema_only):
        result = invoke("--db", str(db), "show")
        assert result.exit_code == 0, result.output
        assert f"no sessions yet (database: {db})" in result.output


def test_show_on_an_empty_postgres_database_says_so_without_a_password(pg_server: EmbeddedServer) -> None:
    url = new_database(pg_server, "axio_fresh_cli")
    result = invoke("--db", url, "show")
    assert result.exit_code == 0, result.output
    assert "no sessions yet (database: postgresql://" in result.output
    for args in (["stats"], ["search", "hello"], ["usage"]):
        assert invoke("--db", url, *args).exit_code == 0


def test_a_real_process_on_a_fresh_machine(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AXIO_CONTEXT_DB"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    script = Path(sys.executable).with_name("axio-context")
    done = subprocess.run(
        [str(script), "stats"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    expected = tmp_path / "xdg" / "axio-context" / "context.db"
    assert f"no sessions yet (database: {expected})" in done.stdout + done.stderr
    assert done.stderr.count("Traceback") == 0
    assert not expected.exists()
