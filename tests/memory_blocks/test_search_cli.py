"""``axio-context search`` with memory blocks (CliRunner, both backends): block hits after the
message hits with their kind, ``--blocks/--no-blocks``, one-line usage errors, and hostile
stored text made safe for the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_helpers import invoke, invoke_json


@pytest.fixture
def db(axio_database_location: str) -> str:
    where = axio_database_location
    invoke("--db", where, "blocks", "create", "human", "Likes green tea", "--agent", "a")
    invoke("--db", where, "blocks", "create", "persona", "A helpful assistant")
    return where


def test_blocks_are_listed_after_the_messages(db: str) -> None:
    found = invoke_json("--db", db, "search", "green", "tea", "--mode", "keyword", "--json")
    assert found["hits"] == []
    [block] = found["blocks"]
    assert (block["kind"], block["label"], block["agent_id"], block["version"]) == ("block", "human", "a", 1)
    assert block["snippet"][slice(*block["highlights"][0])] == "green"
    out = invoke("--db", db, "search", "green", "--mode", "keyword").stdout.splitlines()
    assert out[0].split() == ["BLOCK", "AGENT", "VER", "WHEN", "SNIPPET"]
    assert out[1].split()[:3] == ["human", "a", "1"] and out[1].endswith("Likes **green** tea")
    shared = invoke("--db", db, "search", "helpful").stdout.splitlines()  # hybrid: blocks too
    assert shared[1].split()[:2] == ["persona", "(shared)"]
    lines = invoke("--db", db, "search", "green", "--mode", "keyword", "--nl").stdout.splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["block"]


def test_no_blocks_and_where_blocks_cannot_be_searched(db: str) -> None:
    gone = invoke("--db", db, "search", "green", "--mode", "keyword", "--no-blocks", ok=False)
    assert gone.exit_code == 0 and gone.stdout == "" and "no matches" in gone.stderr
    for extra in (["--mode", "semantic"], ["--raw"], ["--role", "user"]):
        bad = invoke("--db", db, "search", "green", "--blocks", *extra, ok=False)
        assert bad.exit_code == 2 and "'--blocks'" in bad.stderr and "Traceback" not in bad.stderr
    agent_b = invoke_json("--db", db, "search", "green", "--mode", "keyword", "--agent", "b", "--json")
    assert agent_b["blocks"] == []


def test_a_hostile_block_is_made_safe_for_the_terminal(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    hostile = "evil tea\x1b]0;pwned\x07\x1b[2J\u202eright-to-left"
    invoke("--db", db, "blocks", "create", "notes", hostile, "--agent", "ag\x1b[2J")
    out = invoke("--db", db, "search", "evil", "--mode", "keyword").stdout
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out and "evil" in out
    raw = invoke_json("--db", db, "search", "evil", "--mode", "keyword", "--json")
    assert raw["blocks"][0]["agent_id"] == "ag\x1b[2J"  # JSON keeps the exact text (escaped)
