"""Where the database lives (one answer for the library and the CLI), ``info``, the shared output
flags, and read-only commands that never write or create anything."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import click
import pytest

from axio_context.testing import text
from axio_context_sqlite import SCHEMA_VERSION, SQLiteContextStore, connect, default_db_path, open_database
from axio_context_sqlite.cli import cli
from axio_context_sqlite.cli import default_db_path as cli_default_db_path
from tests.support.cli_helpers import invoke, invoke_json, make_sessions

# --- one default path -----------------------------------------------------------------------------


def test_default_db_path_is_the_environment_else_the_user_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli_default_db_path is default_db_path  # still importable from the CLI, the same function
    monkeypatch.setenv("AXIO_CONTEXT_DB", str(tmp_path / "env.db"))
    assert default_db_path() == tmp_path / "env.db"
    monkeypatch.setenv("AXIO_CONTEXT_DB", "~/x.db")
    assert default_db_path() == Path.home() / "x.db"
    monkeypatch.delenv("AXIO_CONTEXT_DB")
    assert default_db_path() == tmp_path / "xdg" / "axio-context" / "context.db"


def test_library_and_command_line_share_the_default_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AXIO_CONTEXT_DB")  # the user data directory (XDG_DATA_HOME is tmp_path/xdg)

    async def write() -> None:
        async with connect() as conn:  # no path: the default
            await SQLiteContextStore(conn, "from-lib", project="/p").append(text("user", "hello"))
        async with open_database() as db:
            assert [s.session_id for s in (await db.list_sessions()).sessions] == ["from-lib"]

    asyncio.run(write())
    assert (tmp_path / "xdg" / "axio-context" / "context.db").is_file()
    assert [s["session_id"] for s in invoke_json("list-sessions", "--json")] == ["from-lib"]
    assert invoke_json("info", "--json")["source"] == "default"


# --- info -----------------------------------------------------------------------------------------


def test_info_names_the_path_and_where_it_came_from_without_creating_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_db = tmp_path / "cli" / "context.db"  # the conftest's $AXIO_CONTEXT_DB: not there yet
    d = invoke_json("info", "--json")
    assert (d["path"], d["source"], d["exists"], d["schema_version"]) == (
        str(env_db),
        "environment",
        False,
        None,
    )
    assert d["library_version"] and isinstance(d["sqlite_vec"], bool)
    assert d["supported_schema_version"] == SCHEMA_VERSION
    assert not env_db.parent.exists()

    monkeypatch.delenv("AXIO_CONTEXT_DB")
    d = invoke_json("info", "--json")
    assert (d["source"], d["exists"]) == ("default", False)
    assert not (tmp_path / "xdg").exists()

    db = tmp_path / "named.db"
    make_sessions(db, {"s": [text("user", "hi")]})
    d = invoke_json("--db", db, "info", "--json")
    assert (d["path"], d["source"], d["exists"]) == (str(db), "argument", True)
    assert d["schema_version"] == SCHEMA_VERSION and d["file_bytes"] > 0 and d["note"] is None
    table = invoke("--db", db, "info").stdout
    assert f"database        {db}\n" in table and "from            --db\n" in table


def test_info_on_an_empty_or_foreign_file_reports_it_and_leaves_it_alone(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    d = invoke_json("--db", empty, "info", "--json")
    assert (d["exists"], d["file_bytes"], d["schema_version"]) == (True, 0, None)
    assert "empty" in d["note"] and empty.stat().st_size == 0
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not a database " * 100)
    before = foreign.read_bytes()
    d = invoke_json("--db", foreign, "info", "--json")
    assert d["schema_version"] is None and "not a database" in d["note"]
    assert foreign.read_bytes() == before


def test_stats_shows_the_database_path(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_sessions(db, {"s": [text("user", "hi")]})
    assert invoke_json("--db", db, "stats", "--json")["path"] == str(db)
    assert json.loads(invoke("--db", db, "stats", "--nl").stdout)["path"] == str(db)
    assert invoke("--db", db, "stats").stdout.startswith(f"database   {db}\n")


# --- read-only commands ---------------------------------------------------------------------------

READ_ONLY = [
    ["list-sessions"],
    ["show"],
    ["search", "word"],
    ["stats"],
    ["export"],
    ["info"],
    ["index"],
    ["similar", "s", "0"],
]


def _state(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: a[0])
def test_read_only_commands_write_no_schema_into_an_empty_file(tmp_path: Path, args: list[str]) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    os.utime(empty, ns=(1_000_000_000, 1_000_000_000))
    result = invoke("--db", empty, *args, ok=False)
    assert _state(empty) == (0, 1_000_000_000)
    assert "Traceback" not in result.output
    if args[0] == "list-sessions":
        assert (result.exit_code, result.stdout) == (0, f"no sessions yet (database: {empty})\n")
        assert invoke("--db", empty, "list-sessions", "--json").stdout == "[]\n"
    elif args[0] in ("show", "search", "stats"):  # an empty file holds nothing yet: not an error
        assert result.exit_code == 0
        assert f"no sessions yet (database: {empty})\n" in result.output
    elif args[0] != "info":
        assert result.exit_code == 1
        assert result.stderr == f"Error: no database at {empty} yet: the file is empty\n"
    assert _state(empty) == (0, 1_000_000_000)


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: a[0])
def test_read_only_commands_create_nothing_at_a_missing_path(
    tmp_path: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "not" / "here.db"
    for named in (["--db", missing], []):  # by --db, and by $AXIO_CONTEXT_DB
        monkeypatch.setenv("AXIO_CONTEXT_DB", str(missing))
        result = invoke(*named, *args, ok=False)
        assert not (tmp_path / "not").exists() and "Traceback" not in result.output
        if args[0] != "info":
            assert (result.exit_code, result.stderr) == (1, f"Error: no database at {missing}\n")
    # The default database on a fresh machine: nothing created either.
    monkeypatch.delenv("AXIO_CONTEXT_DB")
    result = invoke(*args, ok=False)
    assert not (tmp_path / "xdg").exists() and "Traceback" not in result.output
    if args[0] == "list-sessions":
        default = tmp_path / "xdg" / "axio-context" / "context.db"
        assert (result.exit_code, result.stdout) == (0, f"no sessions yet (database: {default})\n")


def test_read_only_commands_do_not_change_an_existing_database(tmp_path: Path) -> None:
    db = tmp_path / "db.db"
    make_sessions(db, {"s": [text("user", "a word"), text("assistant", "reply")]})
    # A search first takes queued messages into the keyword index (index upkeep, the one write a
    # search may make); then the WAL is copied in, so the file alone is the database.
    invoke("--db", db, "search", "word")
    invoke("--db", db, "vacuum")
    os.utime(db, ns=(1_000_000_000, 1_000_000_000))
    before = db.read_bytes()
    for args in READ_ONLY:
        if args[0] != "similar":  # nothing is embedded: an error, also without writing
            invoke("--db", db, *args)
    assert db.read_bytes() == before and db.stat().st_mtime_ns == 1_000_000_000


# --- one set of output flags ------------------------------------------------------------------------

#: Commands whose output is the data itself (export writes the chosen format; --json would be a
#: second way to say -f json).
_NO_JSON = {"export", "browse", "mcp"}  # browse is a full-screen app, mcp speaks JSON-RPC: no data
#: Commands that print a list (an array with --json, a line per object with --nl).
#: Searches print one JSON object (hits, unindexed, why, ...); --nl streams the hits.
_SEARCHES = {"search", "similar"}
_LISTINGS = {
    "blocks",
    "list-sessions",
    "prune",
    "rm",
    "collections",
    "blobs",
    "tasks",
    "pools",
    "usage",
}


def _flags(command: click.Command) -> dict[str, click.Option]:
    return {o: p for p in command.params if isinstance(p, click.Option) for o in p.opts}


def test_every_command_that_prints_data_takes_the_same_output_flags() -> None:
    for name, command in cli.commands.items():
        flags = _flags(command)
        if name in _NO_JSON:
            continue
        assert "--json" in flags, name
        assert flags["--json"].name == "as_json" and flags["--json"].is_flag, name
        if name in _SEARCHES:  # one object: the hits and what the search says about them
            assert str(flags["--json"].help).startswith("Output one JSON object: hits,"), name
            assert flags["--nl"].help == "Output one JSON object per hit, one per line.", name
        elif name in _LISTINGS:
            assert flags["--json"].help == "Output a JSON array.", name
            assert flags["--nl"].help == "Output one JSON object per line.", name
        elif name != "stats":  # stats --nl (the object on one line) predates this and stays
            assert "--nl" not in flags, name
            assert flags["--json"].help == "Output a JSON object.", name


def _json(*args: str | Path) -> Any:
    return json.loads(invoke(*args).stdout)


def test_session_commands_print_one_json_object(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    make_sessions(db, {"alpha": [text("user", "one"), text("assistant", "two")], "beta": [text("user", "b")]})
    forked = _json("--db", db, "fork", "alpha", "--id", "alpha-2", "--json")
    assert (forked["session_id"], forked["parent_id"], forked["message_count"]) == ("alpha-2", "alpha", 2)
    renamed = _json("--db", db, "rename", "alpha-2", "gamma", "--json")
    assert (renamed["previous_id"], renamed["session_id"]) == ("alpha-2", "gamma")
    assert _json("--db", db, "title", "gamma", "A title", "--json") == {
        "session_id": "gamma",
        "title": "A title",
    }
    assert _json("--db", db, "title", "gamma", "--json") == {"session_id": "gamma", "title": "A title"}
    assert _json("--db", db, "title", "gamma", "--clear", "--json") == {"session_id": "gamma", "title": None}
    deleted = _json("--db", db, "rm", "gamma", "beta", "-y", "--json")
    assert sorted(d["session_id"] for d in deleted) == ["beta", "gamma"]
    lines = invoke("--db", db, "rm", "alpha", "-y", "--nl").stdout.splitlines()
    assert [json.loads(line)["session_id"] for line in lines] == ["alpha"]
    assert invoke_json("--db", db, "list-sessions", "--json") == []


def test_vacuum_and_backup_print_one_json_object(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    make_sessions(db, {"s": [text("user", "x" * 5000)]})
    v = _json("--db", db, "vacuum", "--json")
    assert v["recompress"] is None and v["vacuum"]["bytes_after"] > 0
    v = _json("--db", db, "vacuum", "--recompress", "--json")
    assert "rows" in v["recompress"] and v["vacuum"]["method"]
    dest = tmp_path / "copy.db"
    b = _json("--db", db, "backup", dest, "--json")
    assert b == {"source": str(db), "destination": str(dest), "bytes": dest.stat().st_size}
