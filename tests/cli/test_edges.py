"""Command-line fixes from review 3: prune against concurrent writers, a dangling search option,
a deleted working directory, a ``--db`` symlink to a missing file, an empty jsonl export."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from tests.support.cli_helpers import check_storage, invoke, invoke_json, make_sessions

OLD = "2020-06-01T00:00:00.000+00:00"


def _session(sid: str, stamp: str = OLD) -> dict[str, Any]:
    return {
        "id": sid,
        "project": "/p",
        "created_at": stamp,
        "updated_at": stamp,
        "message_count": 1,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": f"{sid} question"}], "created_at": stamp}
        ],
    }


def _export_file(path: Path, sessions: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"format": "axio-context", "version": 1, "sessions": sessions}))
    return path


@pytest.fixture
def while_asked(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], None]], list[str]]:
    """``while_asked(fn)``: ``fn`` runs when the next confirmation prompt is shown (after the
    command listed what it asks about, before the answer); returns the prompts seen."""
    prompts: list[str] = []

    def install(fn: Callable[[], None]) -> list[str]:
        real = click.confirm

        def confirm(text: str, *args: Any, **kwargs: Any) -> Any:
            prompts.append(text)
            fn()
            return real(text, *args, **kwargs)

        monkeypatch.setattr(click, "confirm", confirm)
        return prompts

    return install


def _ids(db: Path) -> list[str]:
    return sorted(s["session_id"] for s in invoke_json("--db", db, "list-sessions", "--json"))


# --- 1. prune deletes only what still qualifies ----------------------------------------------------


def test_prune_keeps_a_session_appended_to_while_the_prompt_waited(
    tmp_path: Path, while_asked: Callable[[Callable[[], None]], list[str]]
) -> None:
    db = tmp_path / "context.db"
    invoke("--db", db, "import", _export_file(tmp_path / "old.json", [_session("old-a"), _session("old-b")]))

    prompts = while_asked(lambda: make_sessions(db, {"old-a": [text("user", "IMPORTANT new message")]}))
    result = invoke("--db", db, "prune", "--before", "30d", input="y\n")
    assert prompts == ["Delete 2 session(s): old-b, old-a?"]  # the agent wrote while the prompt waited
    assert result.stdout == "deleted 1 session(s)\n"
    assert "kept 1 listed session(s) that changed meanwhile" in result.stderr
    assert _ids(db) == ["old-a"]
    shown = invoke("--db", db, "show", "old-a").stdout
    assert "IMPORTANT new message" in shown and "old-a question" in shown
    check_storage(db)


def test_prune_keep_n_rechecks_the_rule_and_deletes_nothing_unlisted(
    tmp_path: Path, while_asked: Callable[[Callable[[], None]], list[str]]
) -> None:
    db = tmp_path / "context.db"
    sessions = [_session(f"s{year}", f"{year}-06-01T00:00:00.000+00:00") for year in (2020, 2021, 2022)]
    invoke("--db", db, "import", _export_file(tmp_path / "old.json", sessions))

    # listed: s2020 and s2021 (--keep 1 keeps s2022); meanwhile s2020 becomes the newest, so
    # s2022 would now be beyond the one kept, but it was not listed (nor confirmed)
    prompts = while_asked(lambda: make_sessions(db, {"s2020": [text("user", "still in use")]}))
    result = invoke("--db", db, "prune", "--keep", "1", "--json", input="y\n")
    assert prompts == ["Delete 2 session(s): s2021, s2020?"]
    assert [s["session_id"] for s in json.loads(result.stdout)] == ["s2021"]
    assert _ids(db) == ["s2020", "s2022"]
    check_storage(db)


# --- 2. a value option written last --------------------------------------------------------------


@pytest.mark.parametrize("option", ["-p", "--project", "-s", "--session", "-k", "--mode", "--since"])
def test_search_option_without_its_value_is_a_usage_error(tmp_path: Path, option: str) -> None:
    db = tmp_path / "context.db"
    make_sessions(db, {"s1": [text("user", "parser question")]})
    result = invoke("--db", db, "search", "parser", option, ok=False)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"Error: Option '{option}' requires an argument.\n"
    if option == "-p":  # click's own words, as list-sessions gives them
        same = invoke("--db", db, "list-sessions", "-p", ok=False)
        assert (same.exit_code, same.stderr) == (2, result.stderr)
    assert invoke("--db", db, "search", "parser", "-k", "1", "--json").exit_code == 0


# --- 4. a deleted working directory ------------------------------------------------------------------


@pytest.fixture
def gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, deleted (monkeypatch changes back afterwards)."""
    folder = tmp_path / "gone"
    folder.mkdir()
    monkeypatch.chdir(folder)
    folder.rmdir()
    return folder


def test_a_deleted_working_directory_is_named(tmp_path: Path, gone: Path) -> None:
    db = tmp_path / "context.db"
    make_sessions(db, {"s1": [text("user", "parser question")]})
    source = _export_file(tmp_path / "one.json", [_session("one")])
    message = "Error: the current directory no longer exists (it was deleted); cd to one that does\n"
    commands: list[list[str | Path]] = [
        ["--db", db, "list-sessions", "--here"],
        ["--db", db, "search", "parser", "--here"],
        ["--db", db, "list-sessions", "-p", "."],
        ["--db", "rel.db", "import", source],
    ]
    for args in commands:
        result = invoke(*args, ok=False)
        assert (result.exit_code, result.stderr) == (1, message), args
    assert not (gone / "rel.db").exists() and not gone.exists()


# --- 6. --db naming a symlink to a missing file ----------------------------------------------------


def test_import_through_a_dangling_db_symlink(tmp_path: Path, umask_022: None) -> None:
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.db"
    link.symlink_to("real/target.db")
    target = tmp_path / "real" / "target.db"
    bad = _session("bad")
    bad["input_tokens"] = 2**63
    failed = invoke("--db", link, "import", _export_file(tmp_path / "bad.json", [bad]), ok=False)
    assert failed.exit_code == 1 and "input_tokens" in failed.stderr
    # the failed import removed the database it created at the target, and left the link alone
    assert link.is_symlink() and os.readlink(link) == "real/target.db"
    assert sorted(os.listdir(tmp_path / "real")) == []
    assert sorted(os.listdir(tmp_path)) == ["bad.json", "link.db", "real"]

    invoke("--db", link, "import", _export_file(tmp_path / "good.json", [_session("good")]))
    assert link.is_symlink() and target.is_file()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # owner-only, as a new database is
    assert _ids(link) == ["good"]


async def test_connect_creates_a_dangling_symlinks_target_owner_only(tmp_path: Path, umask_022: None) -> None:
    link = tmp_path / "link.db"
    link.symlink_to(tmp_path / "missing" / "target.db")
    async with connect(link) as conn:
        await SQLiteContextStore(conn, "s", project="/p").append(text("user", "hi"))
    target = tmp_path / "missing" / "target.db"
    assert link.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o600


# --- 7. an empty jsonl export round-trips ------------------------------------------------------------


def test_an_empty_jsonl_export_imports_as_no_sessions(tmp_path: Path) -> None:
    empty_db = tmp_path / "empty.db"
    invoke("--db", empty_db, "import", _export_file(tmp_path / "none.json", []))
    first = tmp_path / "first.jsonl"
    invoke("--db", empty_db, "export", "--all", "-f", "jsonl", "-o", first)
    assert first.read_bytes() == b""

    for n, fmt in enumerate(([], ["-f", "jsonl"])):
        db = tmp_path / f"copy{n}.db"
        result = invoke("--db", db, "import", *fmt, first)
        assert result.stdout == f"imported 0 session(s), 0 message(s) from {first}\n"
        report = invoke_json("--db", db, "import", *fmt, first, "--json")
        assert (report["format"], report["sessions"]) == ("jsonl", [])
        again = tmp_path / f"again{n}.jsonl"
        invoke("--db", db, "export", "--all", "-f", "jsonl", "-o", again)
        assert again.read_bytes() == first.read_bytes()
        assert _ids(db) == []

    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n \r\n\t\n")
    assert invoke_json("--db", tmp_path / "blank.db", "import", blank, "--json")["sessions"] == []
    # a json export is a document, never empty
    refused = invoke("--db", tmp_path / "json.db", "import", "-f", "json", first, ok=False)
    assert refused.exit_code == 1 and "not a valid axio-context json export" in refused.stderr
    assert not (tmp_path / "json.db").exists()
    # something that is not blank still goes to the reader, which names what is wrong
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\n\nnot json\n")
    assert invoke("--db", tmp_path / "junk.db", "import", "-f", "jsonl", junk, ok=False).exit_code == 1
