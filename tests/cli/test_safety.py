"""The command line never damages what it reads or writes, and says clearly what went wrong.

Through click's CliRunner against real database files; what depends on the process itself (pipes,
FIFOs, stdout's encoding) is in test_cli_process.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest
from click.testing import Result

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.database import Database, open_database
from tests.support.cli_helpers import check_storage, invoke, invoke_json, make_sessions
from tests.support.lock_holder import holding_lock


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "context.db"
    make_sessions(
        path, {"s1": [text("user", "one"), text("assistant", "two")], "s2": [text("user", "three")]}
    )
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- export -o -----------------------------------------------------------------------------------


def test_export_refuses_to_write_over_the_database_or_its_side_files(db: Path, tmp_path: Path) -> None:
    before = invoke("--db", db, "export", "--all").stdout_bytes
    hard = tmp_path / "hard-link.db"
    os.link(db, hard)
    link = tmp_path / "link.db"
    link.symlink_to(db)
    refusals = {
        db: f"Error: {db} is the database itself\n",
        hard: f"Error: {hard} is the database itself\n",
        link: f"Error: {link} is the database itself\n",
        tmp_path / "context.db-wal": f"Error: {tmp_path / 'context.db-wal'} is the database's -wal file\n",
        tmp_path / "context.db-journal": (
            f"Error: {tmp_path / 'context.db-journal'} is the database's -journal file\n"
        ),
    }
    for target, message in refusals.items():
        result = invoke("--db", db, "export", "s1", "-o", target, ok=False)
        assert (result.exit_code, result.stderr) == (1, message)
    assert not (tmp_path / "context.db-journal").exists()
    assert link.is_symlink()
    check_storage(db)
    assert invoke("--db", db, "export", "--all").stdout_bytes == before


def test_export_follows_a_symlink_and_keeps_it(db: Path, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "real" / "export.json")  # dangling until the export writes it
    invoke("--db", db, "export", "--all", "-o", link)
    assert link.is_symlink()
    assert (tmp_path / "real" / "export.json").read_bytes() == invoke(
        "--db", db, "export", "--all"
    ).stdout_bytes
    invoke("--db", db, "export", "s1", "-o", link)  # and again over the existing target
    assert link.is_symlink()
    assert [s["id"] for s in json.loads(link.read_bytes())["sessions"]] == ["s1"]
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["export.json"]


def test_export_dash_is_stdout(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("--db", db, "export", "--all", "-o", "-")
    assert result.stdout_bytes == invoke("--db", db, "export", "--all").stdout_bytes
    assert result.stderr == ""
    assert not (tmp_path / "-").exists()
    invoke("--db", db, "export", "--all", "-o", "./-")  # a file named "-" is still reachable
    assert (tmp_path / "-").read_bytes() == result.stdout_bytes


@pytest.mark.usefixtures("umask_022")
def test_export_file_is_owner_only_and_a_failed_export_keeps_the_old_file(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    invoke("--db", db, "export", "--all", "-o", out)
    assert _mode(out) == 0o600  # like the database: the transcripts are private
    good = out.read_bytes()
    failed = invoke("--db", db, "export", "s1", "nope", "-o", out, ok=False)
    assert (failed.exit_code, failed.stderr) == (1, "Error: no session id starts with 'nope'\n")
    assert out.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir() if "out" in p.name) == ["out.json"]
    shared = tmp_path / "shared.json"
    shared.write_text("old")
    shared.chmod(0o644)  # a file the person made readable stays so when replaced
    invoke("--db", db, "export", "s1", "-o", shared)
    assert _mode(shared) == 0o644 and json.loads(shared.read_bytes())["sessions"][0]["id"] == "s1"


# --- search when the keyword queue cannot be folded ----------------------------------------------


def _queued(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as raw:
        return int(raw.execute("SELECT COUNT(*) FROM fts_pending").fetchone()[0])


@pytest.fixture
def queued(tmp_path: Path) -> Path:
    """A database whose newest message is still queued for the keyword index."""
    path = tmp_path / "queued.db"

    async def fill() -> None:
        async with connect(path) as conn:
            store = SQLiteContextStore(conn, "s", project="/p")
            await store.append(text("user", "indexed okapi"))
            await Database(conn, path).search("okapi", mode="keyword")  # folds the queue
            await store.append(text("assistant", "queued okapi"))

    asyncio.run(fill())
    assert _queued(path) == 1
    return path


def test_library_search_reports_what_a_read_only_connection_could_not_fold(queued: Path) -> None:
    async def scenario() -> None:
        async with connect(queued, readonly=True) as ro:
            hits = await Database(ro, queued).search("okapi", mode="keyword")
            assert [h.position for h in hits] == [0]
            assert (hits.unindexed, hits.why) == (1, "the database is read-only here")
        async with open_database(queued) as db:  # writable and unlocked: fold, then search
            hits = await db.search("okapi", mode="keyword")
            assert sorted(h.position for h in hits) == [0, 1]
            assert (hits.unindexed, hits.why) == (0, None)

    asyncio.run(scenario())


def test_search_while_another_process_holds_the_write_lock(queued: Path) -> None:
    with holding_lock(queued) as holder:
        started = time.monotonic()
        result = invoke("--db", queued, "search", "okapi", "--mode", "keyword", "--json")
        assert time.monotonic() - started < 3  # not the 5 s busy timeout
        assert [h["position"] for h in json.loads(result.stdout)["hits"]] == [0]
        assert result.stderr == (
            "note: 1 recent message(s) could not be searched by keyword: another connection holds"
            " the write lock (taking them into the keyword index needs a write)\n"
        )
        holder.release()
        holder.wait_released()
    after = invoke("--db", queued, "search", "okapi", "--mode", "keyword", "--json")
    assert sorted(h["position"] for h in json.loads(after.stdout)["hits"]) == [0, 1] and after.stderr == ""
    assert _queued(queued) == 0


def test_search_on_a_database_it_cannot_write(queued: Path) -> None:
    # A -shm SQLite cannot create (a folder in its place) makes the command line open the file
    # read-only, as in a folder it may not write; unlike file modes, this holds for root too.
    queued.with_name(queued.name + "-shm").mkdir()
    result = invoke("--db", queued, "search", "okapi", "--mode", "keyword")
    assert "queued okapi" not in result.stdout and "indexed **okapi**" in result.stdout
    assert result.stderr == (
        "note: 1 recent message(s) could not be searched by keyword: the database is read-only here"
        " (taking them into the keyword index needs a write)\n"
    )


# --- ids in tables -------------------------------------------------------------------------------


def test_tables_never_show_an_ambiguous_session_id(tmp_path: Path) -> None:
    path = tmp_path / "ids.db"
    twin_a = "0123456789abcd" + "e" * 18  # two random-looking ids sharing 14 characters
    twin_b = "0123456789abcd" + "f" * 18
    lone = "fedcba9876543210" * 2
    make_sessions(
        path,
        {
            sid: [text("user", f"kiwi in {sid}")]
            for sid in ("alpha-session-1", "alpha-session-2", twin_a, twin_b, lone)
        },
    )
    fork = invoke("--db", path, "fork", "alpha-session-1").stdout.strip()
    table = invoke("--db", path, "list-sessions").stdout.splitlines()
    shown = [line.split()[0] for line in table[1:]]
    assert sorted(shown) == sorted(
        ["alpha-session-1", "alpha-session-2", twin_a[:15], twin_b[:15], lone[:12], fork[:12]]
    )
    fork_line = next(line for line in table if line.startswith(fork[:12]))
    assert "alpha-session-1@1" in fork_line
    for typed in shown:  # what the table shows, typed back, is that one session
        assert invoke("--db", path, "show", typed, "--json").stdout
    hits = invoke("--db", path, "search", "kiwi", "--mode", "keyword", "-k", "10").stdout.splitlines()
    assert sorted(line.split()[0] for line in hits[1:]) == sorted(
        ["alpha-session-1", "alpha-session-2", twin_a[:15], twin_b[:15], lone[:12]]
    )
    pruned = invoke("--db", path, "prune", "--keep", "0", "--dry-run").stdout.splitlines()
    assert sorted(line.split()[0] for line in pruned[1:]) == sorted(shown)


# --- --project as a path -------------------------------------------------------------------------


def test_project_given_as_a_path_matches_its_stored_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    proj = home / "src" / "app"
    proj.mkdir(parents=True)
    (tmp_path / "link").symlink_to(proj)
    path = tmp_path / "projects.db"
    make_sessions(path, {"in-app": [text("user", "walrus here")]}, project=str(proj.resolve()))
    make_sessions(path, {"labelled": [text("user", "walrus there")]}, project="infra")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(proj)

    def listed(value: str) -> list[str]:
        return [r["session_id"] for r in invoke_json("--db", path, "list-sessions", "-p", value, "--json")]

    for value in (".", "./", "~/src/app", f"{proj}/", str(tmp_path / "link"), "../app"):
        assert listed(value) == ["in-app"], value
    assert listed("infra") == ["labelled"]  # a label matches exactly
    assert listed("./infra") == [] and listed("app") == []
    hits = invoke_json("--db", path, "search", "walrus", "-p", "~/src/app", "--json")["hits"]
    assert [h["session_id"] for h in hits] == ["in-app"]
    doomed = invoke_json("--db", path, "prune", "--keep", "0", "-p", ".", "--dry-run", "--json")
    assert [s["session_id"] for s in doomed] == ["in-app"]


def test_a_capped_listing_says_so_on_stderr_in_every_format(tmp_path: Path) -> None:
    path = tmp_path / "many.db"
    make_sessions(path, {f"s{i:02}": [text("user", f"message {i}")] for i in range(53)})

    def count(result: Result, fmt: str) -> int:
        return len(json.loads(result.stdout) if fmt == "--json" else result.stdout.splitlines())

    for fmt in ("--json", "--nl"):
        capped = invoke("--db", path, "list-sessions", fmt)
        assert count(capped, fmt) == 50
        assert capped.stderr == "(the last active 50; -n 0 lists all)\n"
        every = invoke("--db", path, "list-sessions", fmt, "-n", "0")
        assert count(every, fmt) == 53 and every.stderr == ""


# --- import --------------------------------------------------------------------------------------


def test_import_dash_reads_stdin(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exported = invoke("--db", db, "export", "--all").stdout
    copy = tmp_path / "copy.db"
    result = invoke("--db", copy, "import", "-", input=exported)
    assert result.stdout == "imported 2 session(s), 3 message(s) from standard input\n"
    assert invoke("--db", copy, "export", "--all").stdout == exported
    clash = invoke("--db", copy, "import", "-", input=exported, ok=False)
    assert clash.stderr.startswith("Error: 2 session(s) in standard input already exist")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text(exported)  # a file named "-" is ./-
    assert invoke("--db", tmp_path / "other.db", "import", "./-").stdout.endswith("from ./-\n")


def test_a_failed_import_leaves_no_database_it_created(db: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(invoke("--db", db, "export", "--all").stdout_bytes[:100])
    typo = tmp_path / "typo" / "nested" / "context.db"
    result = invoke("--db", typo, "import", truncated, ok=False)
    assert result.exit_code == 1 and result.stderr.startswith("Error: not a valid axio-context json export")
    assert not (tmp_path / "typo").exists()
    # an existing database stays, whatever the import did
    before = invoke("--db", db, "export", "--all").stdout
    assert invoke("--db", db, "import", truncated, ok=False).exit_code == 1
    assert invoke("--db", db, "export", "--all").stdout == before


# --- control characters --------------------------------------------------------------------------


def test_stored_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "esc.db"
    hostile = "tapir\rOVERWRITTEN \x1b]0;TITLE\x07 \x1b[2J\x9b31m done\x7f"
    make_sessions(path, {"esc": [text("user", hostile), text("assistant", "line one\nline two\tend")]})
    invoke("--db", path, "title", "esc", "bad\x1b[31mtitle")
    outputs = {
        "list": invoke("--db", path, "list-sessions").stdout,
        "show": invoke("--db", path, "show", "esc").stdout,
        "search": invoke("--db", path, "search", "tapir", "--mode", "keyword").stdout,
        "title": invoke("--db", path, "title", "esc").stdout,
        "stats": invoke("--db", path, "stats").stdout,
    }
    for name, out in outputs.items():
        assert not any(ch in out for ch in "\r\x1b\x07\x7f\x9b"), name
    assert "bad\\x1b[31mtitle" in outputs["list"] and outputs["title"] == "bad\\x1b[31mtitle\n"
    assert "tapir\\rOVERWRITTEN \\x1b]0;TITLE\\x07 \\x1b[2J\\x9b31m done\\x7f" in outputs["show"]
    assert "line one\nline two\tend" in outputs["show"]  # a transcript keeps its lines and tabs
    # JSON escapes them itself, and keeps the text exactly
    doc = json.loads(invoke("--db", path, "show", "esc", "--json").stdout)
    assert doc["messages"][0]["content"][0]["text"] == hostile


# --- numbers and dates out of range --------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["list-sessions", "--since", "99999999d"], "'--since'"),
        (["list-sessions", "--since", "99999999999999999999999d"], "'--since'"),
        (["prune", "--before", "3000000w"], "'--before'"),
        (["search", "x", "--since", "3000000w"], "'--since'"),
        (["list-sessions", "-n", "99999999999999999999"], "'-n' / '--limit'"),
        (["list-sessions", "-n", str(2**63 - 1)], "'-n' / '--limit'"),
        (["prune", "--keep", "99999999999999999999"], "'--keep'"),
        (["reindex", "--batch-size", "99999999999999999999"], "'--batch-size'"),
    ],
)
def test_out_of_range_values_are_usage_errors_naming_the_option(
    db: Path, args: list[str], option: str
) -> None:
    result = invoke("--db", db, *args, ok=False)
    assert result.exit_code == 2, result.output
    assert f"Error: Invalid value for {option}: " in result.stderr
    assert isinstance(result.exception, SystemExit)  # click's usage error, not an OverflowError


# --- small things said right ---------------------------------------------------------------------


def test_filters_that_match_nothing_are_not_an_empty_database(db: Path) -> None:
    for args in (["--since", "0d"], ["-p", "/nope"], ["-p", "a-label"]):
        result = invoke("--db", db, "list-sessions", *args)
        assert result.stdout == f"no session matches the filters (database: {db})\n", args
    empty = db.with_name("empty.db")
    invoke("--db", empty, "import", "-", input='{"format": "axio-context", "version": 1, "sessions": []}')
    assert (
        invoke("--db", empty, "list-sessions", "-p", "/nope").stdout
        == f"no sessions yet (database: {empty})\n"
    )


def test_a_database_named_by_the_environment_must_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.db"
    monkeypatch.setenv("AXIO_CONTEXT_DB", str(missing))
    for args in (["list-sessions"], ["list-sessions", "--json"], ["stats"]):
        result = invoke(*args, ok=False)
        assert (result.exit_code, result.stderr) == (1, f"Error: no database at {missing}\n"), args
    assert not missing.exists()


def test_reindex_names_an_unknown_model_and_refuses_a_dimension_it_ignores(db: Path, tmp_path: Path) -> None:
    for args in (["reindex", "--model", "bogus"], ["search", "x", "--model", "bogus"]):
        result = invoke("--db", db, *args, ok=False)
        assert result.exit_code == 2
        assert "Invalid value for '--model': unknown model 'bogus': use hashing, minilm" in result.stderr
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    for model in ("minilm", str(model_dir)):
        result = invoke("--db", db, "reindex", "--model", model, "--dimension", "64", ok=False)
        assert result.exit_code == 2, model
        assert "Invalid value for '--dimension': only the hashing embedder has a width" in result.stderr
    assert (
        invoke_json("--db", db, "reindex", "--model", "hashing", "--dimension", "64", "--json")["dimension"]
        == 64
    )


def test_fork_refuses_an_empty_id_as_rename_does(db: Path) -> None:
    for args in (["fork", "s1", "--id", ""], ["rename", "s1", ""]):
        result = invoke("--db", db, *args, ok=False)
        assert (result.exit_code, result.stderr) == (1, "Error: a session id must not be empty\n"), args
    assert len(invoke_json("--db", db, "list-sessions", "--json")) == 2


@pytest.mark.parametrize("query", ["", " "])
def test_an_empty_search_finds_nothing(db: Path, query: str) -> None:
    result = invoke("--db", db, "search", query, "--mode", "keyword")
    assert (result.stdout, result.stderr) == ("", "no matches\n")
    assert invoke_json("--db", db, "search", query, "--json")["hits"] == []


def test_help_says_what_each_command_takes_and_prints() -> None:
    assert invoke("show", "--help").stdout.startswith("Usage: cli show [OPTIONS] [SESSION]\n")
    assert invoke("export", "--help").stdout.startswith("Usage: cli export [OPTIONS] [SESSION]...\n")
    assert invoke("rm", "--help").stdout.startswith("Usage: cli rm [OPTIONS] SESSION...\n")  # required
    stats_help = invoke("stats", "--help").stdout
    assert "Output a JSON object." in stats_help and "JSON array" not in stats_help
    both = invoke("title", "s1", "x", "--clear", ok=False)
    assert both.exit_code == 2 and "Error: give TEXT or --clear, not both" in both.stderr
    assert "[TEXT]" in invoke("title", "--help").stdout
