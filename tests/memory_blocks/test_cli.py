"""``axio-context blocks`` on both backends (CliRunner, ``--json`` parsed), its one-line errors,
stored text made safe for the terminal, and one real process of the installed command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_helpers import invoke, invoke_json


@pytest.fixture
def db(axio_database_location: str) -> str:
    return axio_database_location


def test_a_block_through_its_commands(db: str) -> None:
    made = invoke_json(
        "--db", db, "blocks", "create", "human", "Name: Ada", "--agent", "a", "--limit", "60", "--json"
    )
    assert (made["label"], made["version"], made["agent_id"], made["limit"]) == ("human", 1, "a", 60)
    invoke("--db", db, "blocks", "append", "human", "Likes tea", "--agent", "a")
    replaced = invoke_json(
        "--db", db, "blocks", "replace", "human", "tea", "coffee", "--agent", "a", "--json"
    )
    assert replaced["value"] == "Name: Ada\nLikes coffee"
    assert (
        invoke_json("--db", db, "blocks", "set", "human", "Ada", "--agent", "a", "--expect", "3", "--json")[
            "version"
        ]
        == 4
    )
    assert (
        invoke_json("--db", db, "blocks", "undo", "human", "--agent", "a", "--json")["value"]
        == "Name: Ada\nLikes coffee"
    )
    assert invoke_json("--db", db, "blocks", "redo", "human", "--agent", "a", "--json")["value"] == "Ada"
    history = invoke_json("--db", db, "blocks", "history", "human", "--agent", "a", "--json")
    assert [v["action"] for v in history] == ["create", "append", "replace", "set", "undo", "redo"]
    diff = invoke_json("--db", db, "blocks", "diff", "human", "1", "2", "--agent", "a", "--json")
    assert "+Likes tea" in diff["diff"]
    shown = invoke_json("--db", db, "blocks", "show", "human", "--agent", "a", "--json")
    assert shown["value"] == "Ada" and shown["version"] == 6
    assert [b["label"] for b in invoke_json("--db", db, "blocks", "--agent", "a", "--json")] == ["human"]
    assert invoke_json("--db", db, "blocks", "--json") == []  # no shared blocks
    invoke("--db", db, "blocks", "create", "team", "ship on friday", "--description", "shared notes")
    invoke("--db", db, "blocks", "attach", "team", "a")
    assert [b["label"] for b in invoke_json("--db", db, "blocks", "--agent", "a", "--json")] == [
        "human",
        "team",
    ]
    assert [b["label"] for b in invoke_json("--db", db, "blocks", "search", "FRIDAY", "--json")] == ["team"]
    assert len(invoke_json("--db", db, "blocks", "--all", "--json")) == 2
    table = invoke("--db", db, "blocks", "--agent", "a").stdout
    assert table.splitlines()[0].split() == ["LABEL", "OWNER", "VER", "CHARS", "RO", "DESCRIPTION", "UPDATED"]
    assert "(shared)" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "nope"], "Error: no shared block 'nope'"),
        (["set", "nope", "x", "--agent", "a"], "Error: no block 'nope' of agent 'a'"),
        (["create", "", "x"], "Error: a block label must not be empty"),
        (["create", "x" * 101, "v"], "Error: a block label is at most 100 characters, got 101"),
        (
            ["set", "small", "too long"],
            "Error: block 'small': the new value is 8 characters, over its limit of 3",
        ),
        (["append", "rules", "x"], "Error: block 'rules' is read-only; nothing was written"),
        (["set", "small", "ab", "--expect", "7"], "Error: block 'small' is at version 1, not 7"),
        (["undo", "small"], "Error: block 'small' has nothing to undo"),
        (["replace", "small", "zz", "y"], "Error: no replacement was made: old_str 'zz' does not appear"),
        (["diff", "small", "1", "5"], "Error: block 'small' has versions 1 to 1, not 5"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(db: str, args: list[str], message: str) -> None:
    invoke("--db", db, "blocks", "create", "small", "abc", "--limit", "3")
    invoke("--db", db, "blocks", "create", "rules", "be kind", "--read-only")
    result = invoke("--db", db, "blocks", *args, ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    after = {b["label"]: (b["value"], b["version"]) for b in invoke_json("--db", db, "blocks", "--json")}
    assert after == {"rules": ("be kind", 1), "small": ("abc", 1)}


def test_stored_text_is_made_safe_for_the_terminal(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    hostile = "evil\x1b]0;pwned\x07\x1b[2J\u202eright-to-left"
    agent = "ag\x1b[2J"
    invoke("--db", db, "blocks", "create", "notes", hostile, "--description", "\x1b[31mred", "--agent", agent)
    for args in (["blocks", "--all"], ["blocks", "show", "notes"], ["blocks", "history", "notes"]):
        out = (
            invoke("--db", db, *args, "--agent", agent).stdout
            if args[1:2] != ["--all"]
            else invoke("--db", db, *args).stdout
        )
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
        assert "evil" in out or "notes" in out
    with pytest.raises(AssertionError, match="control characters"):
        invoke("--db", db, "blocks", "create", "label\u202e", "x")
    raw = invoke_json("--db", db, "blocks", "show", "notes", "--agent", agent, "--json")
    assert raw["value"] == hostile  # JSON keeps the exact text (escaped)


def test_the_installed_command_reads_stdin(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    run = subprocess.run(
        ["axio-context", "--db", str(db), "blocks", "create", "notes", "-", "--json"],
        input="line one\nline two",
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(run.stdout)["value"] == "line one\nline two"
    shown = subprocess.run(
        ["axio-context", "--db", str(db), "blocks", "show", "notes"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.endswith("\nline one\nline two\n")


def test_update_delete_detach_and_lines(db: str) -> None:
    invoke("--db", db, "blocks", "create", "team", "notes", "--description", "old")
    invoke("--db", db, "blocks", "attach", "team", "a")
    updated = invoke_json(
        "--db", db, "blocks", "update", "team", "--description", "new", "--read-only", "--json"
    )
    assert (updated["description"], updated["read_only"], updated["version"]) == ("new", True, 2)
    assert invoke("--db", db, "blocks", "delete", "team", ok=False).exit_code == 1  # read-only
    invoke("--db", db, "blocks", "update", "team", "--writable")
    lines = invoke("--db", db, "blocks", "--nl").stdout.splitlines()
    assert [json.loads(line)["attached"] for line in lines] == [["a"]]
    assert "detached team from a" in invoke("--db", db, "blocks", "detach", "team", "a").stdout
    gone = invoke_json("--db", db, "blocks", "delete", "team", "--json")
    assert gone["version"] == 3
    assert invoke_json("--db", db, "blocks", "--all", "--json") == []


def test_delete_keeps_the_history_and_undo_brings_a_block_back(db: str) -> None:
    invoke("--db", db, "blocks", "create", "notes", "keep me", "--agent", "a")
    invoke("--db", db, "blocks", "delete", "notes", "--agent", "a")
    assert invoke_json("--db", db, "blocks", "--agent", "a", "--json") == []
    history = invoke_json("--db", db, "blocks", "history", "notes", "--agent", "a", "--json")
    assert [(v["version"], v["action"]) for v in history] == [(1, "create"), (2, "delete")]
    back = invoke_json("--db", db, "blocks", "undo", "notes", "--agent", "a", "--json")
    assert (back["value"], back["version"]) == ("keep me", 3)
