"""The ``axio-context`` command line through click's CliRunner, against real database files."""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from axio_context import Message, TextBlock
from axio_context.testing import every_block_message, text
from axio_context.transcript import iter_jsonl, read_json
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.cli import cli
from axio_context_sqlite.store.chunks import CHUNK
from tests.support.cli_helpers import build_rich_db, check_storage, invoke, invoke_json, make_sessions
from tests.support.legacy import use_dictionaries
from tests.support.sqlite_checks import scalar
from tests.support.words import prose


@pytest.fixture
def db() -> Path:
    """The default database (AXIO_CONTEXT_DB points into tmp_path), not created yet."""
    return Path(os.environ["AXIO_CONTEXT_DB"])


@pytest.fixture
def rich(db: Path) -> dict[str, str]:
    return asyncio.run(build_rich_db(db))


# --- the group -----------------------------------------------------------------------------------


def test_help_and_version() -> None:
    out = invoke("--help").stdout
    for command in (
        "list-sessions", "show", "export", "import", "import-axio", "fork", "rm", "rename", "title",
        "stats", "prune", "vacuum", "backup",
    ):  # fmt: skip
        assert command in out
    assert "0.1.0" in invoke("--version").stdout


def test_unknown_command_is_a_usage_error() -> None:
    result = invoke("frobnicate", ok=False)
    assert result.exit_code == 2


# --- list-sessions -------------------------------------------------------------------------------


def test_list_sessions_on_a_fresh_machine_exits_0_without_creating_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AXIO_CONTEXT_DB")  # the default database, not one named by the variable
    db = tmp_path / "xdg" / "axio-context" / "context.db"
    result = invoke("list-sessions")
    assert result.stdout == f"no sessions yet (database: {db})\n"
    assert invoke_json("list-sessions", "--json") == []
    assert invoke("list-sessions", "--nl").stdout == ""
    assert not db.exists()


def test_default_database_is_in_the_user_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AXIO_CONTEXT_DB")
    expected = tmp_path / "xdg" / "axio-context" / "context.db"
    assert invoke("list-sessions").stdout == f"no sessions yet (database: {expected})\n"
    invoke("import", _export_file(tmp_path, {"s1": [text("user", "hi")]}))
    assert expected.is_file()
    assert [s["session_id"] for s in invoke_json("list-sessions", "--json")] == ["s1"]


def test_explicit_missing_db_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    for args in (["list-sessions"], ["show"], ["export", "--all"], ["stats"], ["vacuum"], ["rm", "-y", "x"]):
        result = invoke("--db", missing, *args, ok=False)
        assert result.exit_code == 1, args
        assert result.stderr == f"Error: no database at {missing}\n"
        assert "Traceback" not in result.output
    assert not missing.exists()


def test_list_sessions_table_json_and_nl(rich: dict[str, str]) -> None:
    rows = invoke_json("list-sessions", "--json")
    assert len(rows) == 7
    by_id = {r["session_id"]: r for r in rows}
    root = by_id["root-session"]
    assert root["title"] == "Every block"
    assert root["project"] == "/work/alpha"
    assert root["message_count"] == 8
    assert (root["input_tokens"], root["output_tokens"]) == (1200, 340)
    child = by_id[rich["child"]]
    assert (child["parent_id"], child["fork_position"]) == ("root-session", 7)
    assert child["preview"] == "plain ascii"
    assert [r["updated_at"] for r in rows] == sorted((r["updated_at"] for r in rows), reverse=True)
    by_creation = invoke_json("list-sessions", "--json", "--sort", "created")
    assert [r["created_at"] for r in by_creation] == sorted((r["created_at"] for r in rows), reverse=True)

    lines = invoke("list-sessions", "--nl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == rows

    table = invoke("list-sessions").stdout.splitlines()
    assert table[0].split() == [
        "ID",
        "PROJECT",
        "CREATED",
        "UPDATED",
        "MSGS",
        "IN",
        "OUT",
        "FORKED",
        "FROM",
        "PREVIEW",
    ]
    root_line = next(line for line in table if line.startswith("root-session"))
    assert "/work/alpha" in root_line and "1,200" in root_line and "Every block" in root_line
    child_line = next(line for line in table if line.startswith(rich["child"][:12]))
    assert "root-session@7" in child_line


def test_list_sessions_filters(rich: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    beta = invoke_json("list-sessions", "--json", "--project", "/work/beta")
    assert sorted(r["session_id"] for r in beta) == sorted([rich["orphan"], "tokens-only"])

    limited = invoke("list-sessions", "-n", "2")
    assert len(limited.stdout.splitlines()) == 3
    assert "-n 0 lists all" in limited.stderr
    assert len(invoke_json("list-sessions", "--json", "--limit", "3")) == 3
    assert len(invoke_json("list-sessions", "--json", "-n", "0")) == 7

    assert len(invoke_json("list-sessions", "--json", "--since", "1d")) == 7
    assert invoke_json("list-sessions", "--json", "--since", "2999-01-01") == []

    here = tmp_path / "proj"
    here.mkdir()
    make_sessions(
        Path(os.environ["AXIO_CONTEXT_DB"]), {"here-session": [text("user", "in here")]}, str(here.resolve())
    )
    monkeypatch.chdir(here)
    assert [r["session_id"] for r in invoke_json("list-sessions", "--json", "--here")] == ["here-session"]


def test_list_sessions_usage_errors(rich: dict[str, str]) -> None:
    assert invoke("list-sessions", "--json", "--nl", ok=False).exit_code == 2
    assert invoke("list-sessions", "--here", "--project", "x", ok=False).exit_code == 2
    bad = invoke("list-sessions", "--since", "last tuesday", ok=False)
    assert bad.exit_code == 2 and "not a date" in bad.stderr
    assert invoke("list-sessions", "-n", "-1", ok=False).exit_code == 2


# --- show ----------------------------------------------------------------------------------------


def test_show_defaults_to_the_newest_session(rich: dict[str, str]) -> None:
    out = invoke("show").stdout
    assert out.startswith("# Session long-session\n")
    assert "## 1202 · user" in out


def test_show_renders_for_people(rich: dict[str, str]) -> None:
    out = invoke("show", "root").stdout  # a unique prefix
    assert out.startswith("# Every block\n")
    assert "- forked from" not in out
    # the model's view: the checkpoint's summary stands in for messages 0-2
    assert "Compacted: messages 0-2" in out
    assert "## summary · user\n\nsummary of the start" in out
    assert "## 0 · system" not in out
    assert "**tool result** for `call_1`" in out
    assert "[image: image/png, 4,096 bytes]" in out
    full = invoke("show", "root-session", "--full").stdout
    assert "## 0 · system" in full and "You are terse." in full
    assert "[image: image/png, 1,024 bytes]" in full
    assert "**tool call** `read_file` (id `call_1`)" in full
    assert "[block of unknown type 'hologram']" in full
    assert "summary of the start" not in full.split("\n## 0 ·")[1]


def test_show_folds_long_tool_output(db: Path) -> None:
    from axio_context import ToolResultBlock, ToolUseBlock

    make_sessions(
        db,
        {
            "tools": [
                Message(role="assistant", content=[ToolUseBlock(id="c", name="cat", input={"path": "big"})]),
                Message(role="user", content=[ToolResultBlock(tool_use_id="c", content="y" * 5000)]),
            ]
        },
    )
    out = invoke("show", "tools").stdout
    assert "y" * 600 in out and "y" * 601 not in out
    assert "(4,400 more characters)" in out
    assert "y" * 5000 in invoke("show", "tools", "--fold", "100000").stdout
    assert "(4,900 more characters)" in invoke("show", "tools", "--fold", "100").stdout


def test_show_json(rich: dict[str, str]) -> None:
    doc = invoke_json("show", rich["child"], "--json")
    assert doc["session"]["parent_id"] == "root-session"
    assert doc["summary"] == [{"role": "user", "content": [{"type": "text", "text": "child summary"}]}]
    assert doc["start"] == 7
    assert [m["position"] for m in doc["messages"]] == [7]
    assert doc["messages"][0]["content"] == [{"type": "text", "text": "child question"}]
    full = invoke_json("show", rich["child"], "--json", "--full")
    assert full["summary"] is None
    assert [m["position"] for m in full["messages"]] == list(range(8))
    assert [len(c["summary"]) for c in full["session"]["checkpoints"]] == [2, 1]


def test_show_errors(rich: dict[str, str], db: Path) -> None:
    make_sessions(db, {"abc-1": [text("user", "x")], "abc-2": [text("user", "y")]})
    amb = invoke("show", "abc", ok=False)
    assert amb.exit_code == 1
    assert amb.stderr == "Error: 'abc' matches 2 sessions: abc-1, abc-2\n"
    missing = invoke("show", "zzz", ok=False)
    assert (missing.exit_code, missing.stderr) == (1, "Error: no session id starts with 'zzz'\n")


def test_show_on_an_empty_database(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    invoke("--db", empty, "import", _export_file(tmp_path, {}))
    result = invoke("--db", empty, "show", ok=False)  # nothing stored yet is not an error
    assert (result.exit_code, result.stdout) == (0, f"no sessions yet (database: {empty})\n")


# --- export and import ---------------------------------------------------------------------------


def _export_file(tmp_path: Path, sessions: dict[str, list[Message]], name: str = "in.json") -> Path:
    """A json export of ``sessions`` (made by this tool from a scratch database)."""
    scratch = tmp_path / f"scratch-{name}.db"
    make_sessions(scratch, sessions)
    out = tmp_path / name
    invoke("--db", scratch, "export", "--all", "-o", out)
    return out


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_round_trip_is_byte_identical(rich: dict[str, str], db: Path, tmp_path: Path, fmt: str) -> None:
    first = invoke("export", "--all", "-f", fmt).stdout_bytes
    path = tmp_path / f"all.{fmt}"
    invoke("export", "--all", "-f", fmt, "-o", path)
    assert path.read_bytes() == first
    fresh = tmp_path / "fresh.db"
    report = invoke("--db", fresh, "import", path).stdout
    if fmt == "json":
        stored = sum(len(s["messages"]) for s in json.loads(first)["sessions"])
    else:
        stored = sum(json.loads(line)["kind"] == "message" for line in first.splitlines())
    assert report == f"imported 7 session(s), {stored} message(s) from {path}\n"
    again = invoke("--db", fresh, "export", "--all", "-f", fmt).stdout_bytes
    assert again == first

    # the imported database answers every question the same way
    assert invoke_json("--db", fresh, "list-sessions", "--json") == invoke_json("list-sessions", "--json")
    for sid in rich.values():
        for extra in ([], ["--full"]):
            assert invoke_json("--db", fresh, "show", sid, "--json", *extra) == invoke_json(
                "show", sid, "--json", *extra
            )
    assert (
        invoke_json("--db", fresh, "stats", "--json")["stored_messages"]
        == invoke_json("stats", "--json")["stored_messages"]
    )
    check_storage(fresh)


def test_export_format_contents(rich: dict[str, str], tmp_path: Path) -> None:
    doc = json.loads(invoke("export", "--all").stdout)
    assert (doc["format"], doc["version"]) == ("axio-context", 1)
    by_id = {s["id"]: s for s in doc["sessions"]}
    order = [s["id"] for s in doc["sessions"]]
    # parents before forks; a fork lists only its own messages when its parent is in the file
    assert order.index("root-session") < order.index(rich["child"]) < order.index(rich["grandchild"])
    child = by_id[rich["child"]]
    assert (child["inherited"], child["message_count"], len(child["messages"])) == (7, 8, 1)
    assert by_id[rich["grandchild"]]["inherited"] == 8
    # the root popped below the detached fork's fork point: only the popped message was copied
    # into the fork, so it still shares the first 7 rows and carries the other 2 itself
    detached = by_id[rich["detached"]]
    assert (detached["inherited"], len(detached["messages"])) == (7, 2)
    # the orphan (its parent was deleted, so it stands alone) carries its whole transcript
    orphan = by_id[rich["orphan"]]
    assert (orphan["parent_id"], orphan["inherited"], len(orphan["messages"])) == (None, 0, 3)
    assert [c["summarizer"] for c in by_id["root-session"]["checkpoints"]] == ["test-summarizer"]
    assert by_id["root-session"]["metadata"] == {
        "app": "tests",
        "numbers": [1, 2.5, None],
        "nested": {"ok": True},
    }
    assert all(m["created_at"].endswith("+00:00") for m in by_id["root-session"]["messages"])

    # a fork exported on its own carries what it inherited
    alone = read_json(invoke("export", rich["grandchild"]).stdout_bytes)
    assert [(s.id, s.inherited, len(s.messages)) for s in alone] == [(rich["grandchild"], 0, 9)]
    two = read_json(invoke("export", rich["grandchild"], "root-session").stdout_bytes)
    assert [(s.id, s.inherited) for s in two] == [("root-session", 0), (rich["grandchild"], 0)]
    pair = read_json(invoke("export", rich["grandchild"], rich["child"]).stdout_bytes)
    assert [(s.id, s.inherited) for s in pair] == [(rich["child"], 0), (rich["grandchild"], 8)]

    lines = invoke("export", "tokens-only", "long-session", "-f", "jsonl").stdout_bytes.splitlines()
    assert len(lines) == 2 + 1203
    assert json.loads(lines[0])["kind"] == "session"
    assert json.loads(lines[2])["position"] == 0
    assert [s.id for s in iter_jsonl(lines)] == ["tokens-only", "long-session"]


def test_export_defaults_to_newest_and_markdown(rich: dict[str, str]) -> None:
    newest = read_json(invoke("export").stdout_bytes)
    assert [s.id for s in newest] == ["long-session"]
    md = invoke("export", rich["child"], "-f", "markdown").stdout
    assert md.startswith(f"# Session {rich['child']}\n")
    assert "- forked from `root-session` at message 7" in md
    assert "## 0 · system" in md and "## 7 · user" in md  # self-contained: inherited messages included
    assert "[audio: audio/wav, 6 bytes]" in md
    both = invoke("export", "root-session", rich["child"], "--format", "markdown").stdout
    assert both.count("\n---\n") == 1


def test_export_usage_and_errors(rich: dict[str, str], tmp_path: Path) -> None:
    assert invoke("export", "root", "--all", ok=False).exit_code == 2
    assert invoke("export", "-f", "xml", ok=False).exit_code == 2
    out = tmp_path / "out.json"
    bad = invoke("export", "root-session", "nope", "-o", out, ok=False)
    assert (bad.exit_code, bad.stderr) == (1, "Error: no session id starts with 'nope'\n")
    assert not out.exists() and not (tmp_path / "out.json.partial").exists()


def test_list_sessions_shortens_many_random_ids_with_one_query(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axio_context_sqlite.store import naming

    rng = random.Random(7)
    ids = ["".join(rng.choice("0123456789abcdef") for _ in range(32)) for _ in range(200)]
    # ids sharing 12, 15 and 31 characters with another, a uuid with dashes, a readable id
    ids += ["abcdef012345" + "0" * 20, "abcdef012345" + "1" * 20, "0123456789abcde" + "f" * 17]
    ids += [
        "0123456789abcde" + "e" * 17,
        "f" * 31 + "0",
        "f" * 31 + "1",
        "12345678-1234-1234-1234-123456789abc",
    ]
    ids += ["12345678-1234-1234-1234-123456789abd", "named-session"]
    make_sessions(db, {i: [text("user", "hi")] for i in ids})

    def expected(i: str) -> str:
        if i == "named-session":
            return i
        common = max(next(k for k in range(len(i)) if i[k] != o[k]) for o in ids if o != i)
        return i[: min(len(i), max(12, common + 1))]

    calls: list[str] = []
    ids_with_prefix = naming.ids_with_prefix  # the prefix query short ids are worked out with

    def counted(c: Any, prefix: str, limit: int) -> list[str]:
        calls.append(prefix)
        return ids_with_prefix(c, prefix, limit)

    monkeypatch.setattr(naming, "ids_with_prefix", counted)
    rows = invoke("list-sessions", "-n", "0").stdout.splitlines()[1:]
    assert sorted(r.split()[0] for r in rows) == sorted(expected(i) for i in ids)
    assert len(calls) == 1  # every id at once, not a query (or more) per id
    # a short listing asks about its few ids alone, and shows them the same way
    calls.clear()
    rows = invoke("list-sessions", "-n", "20").stdout.splitlines()[1:]
    assert {r.split()[0] for r in rows} <= {expected(i) for i in ids} and 0 < len(calls) <= 40


def test_import_refuses_existing_ids_unless_told(db: Path, tmp_path: Path) -> None:
    make_sessions(db, {"s1": [text("user", "original")]})
    file = _export_file(tmp_path, {"s1": [text("user", "from file")], "s2": [text("user", "other")]})
    refused = invoke("import", file, ok=False)
    assert refused.exit_code == 1
    assert "1 session(s) in" in refused.stderr and "(s1)" in refused.stderr and "--replace" in refused.stderr
    assert [s["session_id"] for s in invoke_json("list-sessions", "--json")] == ["s1"]  # s2 not written

    replaced = invoke_json("import", file, "--replace", "--json")
    assert [(s["id"], s["replaced"]) for s in replaced["sessions"]] == [("s1", True), ("s2", False)]
    assert invoke_json("show", "s1", "--json")["messages"][0]["content"][0]["text"] == "from file"
    check_storage(db)

    copies = invoke_json("import", file, "--new-ids", "--json")
    new = [s["id"] for s in copies["sessions"]]
    assert len(new) == 2 and not {"s1", "s2"} & set(new)
    assert len(invoke_json("list-sessions", "--json")) == 4
    assert invoke("import", file, "--replace", "--new-ids", ok=False).exit_code == 2


def test_import_replace_keeps_the_parent_of_a_fork_written_before_it(db: Path, tmp_path: Path) -> None:
    make_sessions(db, {"alpha": [text("user", "first"), text("assistant", "second")]})
    invoke("fork", "alpha", "--id", "child")
    invoke("fork", "alpha", "--id", "other")  # a fork the file does not hold
    make_sessions(db, {"child": [text("user", "child question")]})
    child = invoke("export", "child", "-f", "jsonl").stdout
    parent = invoke("export", "alpha", "-f", "jsonl").stdout
    file = tmp_path / "both.jsonl"
    file.write_text(child + parent)  # the fork comes before its parent
    report = invoke_json("import", file, "--replace", "--json")
    assert [(s["id"], s["replaced"]) for s in report["sessions"]] == [("child", True), ("alpha", True)]
    lineage = {s["session_id"]: s["parent_id"] for s in invoke_json("list-sessions", "--json")}
    # the fork this import wrote names the parent its record does; the old one's fork is detached
    assert lineage == {"child": "alpha", "alpha": None, "other": None}
    shown = invoke_json("show", "child", "--json")["messages"]
    assert [m["content"][0]["text"] for m in shown] == ["first", "second", "child question"]
    check_storage(db)


def test_import_new_ids_keeps_lineage(rich: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "all.jsonl"
    invoke("export", "--all", "-f", "jsonl", "-o", path)
    report = invoke_json("import", path, "--new-ids", "--json", "-f", "jsonl")
    mapping = {s["source_id"]: s["id"] for s in report["sessions"]}
    child = invoke_json("show", mapping[rich["child"]], "--json", "--full")
    assert child["session"]["parent_id"] == mapping["root-session"]
    assert child["session"]["fork_position"] == 7
    assert len(child["messages"]) == 8
    orphan = invoke_json("show", mapping[rich["orphan"]], "--json")
    assert orphan["session"]["parent_id"] is None  # its parent was deleted before the export
    check_storage(Path(os.environ["AXIO_CONTEXT_DB"]))


def _break_json(doc: dict[str, Any], where: str) -> bytes:
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["sessions"][1]["messages"][0]["content"][0].__setitem__("text", 5),
            "Expected `str`, got `int` - at `$.sessions[1].messages[0].content[0].text`",
        ),
        (
            lambda d: d["sessions"][0]["messages"][0].__setitem__("role", "robot"),
            "at `$.sessions[0].messages[0].role`",
        ),
        (
            lambda d: d["sessions"][1].__setitem__("message_count", 5),
            "$.sessions[1].messages: session 's2' has 1 messages, expected 5",
        ),
        (
            lambda d: d["sessions"][0]["messages"][0].__setitem__("created_at", "yesterday"),
            "$.sessions[0].messages[0].created_at: 'yesterday' is not an ISO-8601 time",
        ),
        (lambda d: d.__setitem__("version", 9), "export format version 9 is newer than the 2"),
        (lambda d: d["sessions"][1].__setitem__("id", "s1"), "$.sessions[1].id: session 's1' appears twice"),
        (
            lambda d: d["sessions"][1].update(inherited=1, parent_id="elsewhere"),
            "which does not come earlier in this file",
        ),
    ],
)
def test_malformed_json_names_the_field_and_writes_nothing(
    db: Path, tmp_path: Path, mutate: Any, message: str
) -> None:
    file = _export_file(tmp_path, {"s1": [text("user", "one")], "s2": [text("user", "two")]})
    doc = json.loads(file.read_bytes())
    mutate(doc)
    file.write_text(json.dumps(doc))
    result = invoke("import", file, ok=False)
    assert result.exit_code == 1
    assert message in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert not db.exists()  # nothing written: not even the database it would have created


def test_json_syntax_error_names_line_and_column(db: Path, tmp_path: Path) -> None:
    file = _export_file(tmp_path, {"s1": [text("user", "one")]})
    data = file.read_bytes().replace(b'"role":"user"', b'"role":"user",,', 1)
    file.write_bytes(data)
    result = invoke("import", file, ok=False)
    assert result.exit_code == 1
    assert "(line 2, column" in result.stderr
    assert not db.exists()  # nothing written: not even the database it would have created


def test_malformed_jsonl_names_the_line_and_writes_nothing(db: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch.db"
    make_sessions(
        scratch, {"s1": [text("user", "one"), text("assistant", "two")], "s2": [text("user", "three")]}
    )
    good = invoke("--db", scratch, "export", "--all", "-f", "jsonl").stdout_bytes.splitlines()
    cases = {
        "bad-block": (
            [*good[:2], good[2].replace(b'"type":"text"', b'"type":"text","text":1,"x":'), *good[3:]],
            "line 3: JSON is malformed: invalid character (column 105)",
        ),
        "field": (
            [*good[:2], good[2].replace(b'"text":"two"', b'"text":["two"]'), *good[3:]],
            "line 3: Expected `str`, got `array` - at `$.content[0].text`",
        ),
        "position": (
            [good[0], good[2], good[1], *good[3:]],
            "line 2: $.position: expected position 0, found 1",
        ),
        "cut-short": ([*good[:2], *good[3:]], "line 1: session 's1' declares 2 messages"),
        "stray": ([good[1], *good], "line 1: a message line before any session line"),
        "other-session": (
            [*good[:2], good[2].replace(b'"session":"s1"', b'"session":"s2"'), *good[3:]],
            "line 3: $.session: message of session 's2' inside session 's1'",
        ),
    }
    for name, (lines, message) in cases.items():
        file = tmp_path / f"{name}.jsonl"
        file.write_bytes(b"\n".join(lines) + b"\n")
        result = invoke("import", file, ok=False)
        assert result.exit_code == 1, name
        assert message in result.stderr, (name, result.stderr)
        assert "Traceback" not in result.output
    assert not db.exists()  # nothing written: not even the database it would have created


def test_import_of_a_non_export(db: Path, tmp_path: Path) -> None:
    file = tmp_path / "notes.json"
    file.write_text('{"hello": "world"}')
    result = invoke("import", file, ok=False)
    assert result.exit_code == 1
    assert "not a valid axio-context json export" in result.stderr
    other = tmp_path / "other.json"
    other.write_text('{"format": "something-else", "version": 1, "sessions": []}')
    assert "format is 'something-else'" in invoke("import", other, ok=False).stderr
    assert invoke("import", tmp_path / "missing.json", ok=False).exit_code == 2


def test_import_project_none_and_explicit_format(tmp_path: Path) -> None:
    doc = {
        "format": "axio-context",
        "version": 1,
        "sessions": [
            {
                "id": "handmade",
                "created_at": "2025-01-02T03:04:05.678+00:00",
                "updated_at": "2025-01-02T03:04:06+01:00",
                "message_count": 1,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "hello"}],
                        "created_at": "2025-01-02T03:04:05Z",
                    }
                ],
            }
        ],
    }
    file = tmp_path / "hand.txt"
    file.write_text(json.dumps(doc))
    invoke("import", file, "--format", "json")
    [row] = invoke_json("list-sessions", "--json")
    assert (row["project"], row["preview"], row["created_at"]) == (
        None,
        "hello",
        "2025-01-02T03:04:05.678+00:00",
    )
    assert row["updated_at"] == "2025-01-02T02:04:06.000+00:00"


# --- fork, rm, rename, title ---------------------------------------------------------------------


def test_fork(rich: dict[str, str]) -> None:
    new = invoke("fork", "root").stdout.strip()
    assert len(new) == 32
    info = invoke_json("show", new, "--json", "--full")
    assert info["session"]["parent_id"] == "root-session"
    assert len(info["messages"]) == 8
    assert invoke("fork", "root", "--id", "my-fork").stdout == "my-fork\n"
    taken = invoke("fork", "root", "--id", "my-fork", ok=False)
    assert (taken.exit_code, taken.stderr) == (1, "Error: a session 'my-fork' already exists\n")
    assert invoke("fork", "nope", ok=False).exit_code == 1


def _standing_alone(view: dict[str, Any]) -> dict[str, Any]:
    """``show --json`` of a fork as it reads once its parent is deleted: the same messages and
    fields, without the lineage (a deleted session's forks stand alone)."""
    return {**view, "session": {**view["session"], "parent_id": None, "fork_position": None}}


def test_rm_asks_and_forks_keep_their_view(rich: dict[str, str], db: Path) -> None:
    before = _standing_alone(invoke_json("show", rich["child"], "--json", "--full"))
    declined = invoke("rm", "root-session", input="n\n")
    assert declined.exit_code == 0 and "nothing deleted" in declined.stderr
    assert "Delete 1 session(s): root-session?" in declined.stderr
    assert len(invoke_json("list-sessions", "--json")) == 7
    assert invoke("rm", "root-session", input="y\n").stdout == "deleted 1 session(s)\n"
    assert invoke_json("show", rich["child"], "--json", "--full") == before
    assert invoke("rm", "--yes", rich["child"][:10], rich["grandchild"]).stdout == "deleted 2 session(s)\n"
    assert len(invoke_json("list-sessions", "--json")) == 4
    check_storage(db)
    assert invoke("rm", "-y", "nope", ok=False).exit_code == 1


def test_rename_and_title(rich: dict[str, str]) -> None:
    assert invoke("rename", "root", "renamed").stdout == "renamed root-session to renamed\n"
    assert invoke_json("show", rich["child"], "--json")["session"]["parent_id"] == "renamed"
    assert invoke("rename", "renamed", "long-session", ok=False).stderr == (
        "Error: a session 'long-session' already exists\n"
    )
    assert invoke("title", "renamed").stdout == "Every block\n"
    invoke("title", "long", "A long chat")
    assert invoke("title", "long-session").stdout == "A long chat\n"
    assert "A long chat" in invoke("list-sessions").stdout
    invoke("title", "long", "--clear")
    assert invoke("title", "long-session").stdout == ""
    assert invoke("title", "long", "x", "--clear", ok=False).exit_code == 2


# --- stats, prune, vacuum, backup ----------------------------------------------------------------


def test_stats(rich: dict[str, str], db: Path) -> None:
    s = invoke_json("stats", "--json")
    assert s["sessions"] == 7
    assert s["messages"] == 8 + 8 + 9 + 9 + 3 + 0 + 1203
    assert s["stored_messages"] < s["messages"]  # forks share rows
    # each token once: a fork counts what it added after the fork, not its parent's totals again
    assert (s["input_tokens"], s["output_tokens"]) == (1200 + 10 + 0 + 0 + 0 + 7, 340 + 20 + 0 + 0 + 8)
    assert s["file_bytes"] + s["wal_bytes"] > 0
    assert s["blobs"] >= 2 and s["checkpoints"] == 1 + 2 + 2 + 1  # forks copy checkpoint rows
    projects = {p["project"]: p for p in s["by_project"]}
    assert projects["/work/beta"]["sessions"] == 2
    assert json.loads(invoke("stats", "--nl").stdout) == s
    # The long session's older messages are sealed into chunks: their payloads count there.
    assert s["chunks"] == scalar(db, "SELECT COUNT(*) FROM chunks") > 0
    assert s["sealed_messages"] == CHUNK * s["chunks"]
    assert s["payload_bytes"] == scalar(
        db, "SELECT SUM(length(payload)) + (SELECT SUM(length(payload)) FROM chunks) FROM messages"
    )
    assert s["dictionaries"] == scalar(db, "SELECT COUNT(*) FROM zstd_dicts") == 0  # none is ever trained
    text_out = invoke("stats").stdout
    chunks = s["chunks"]
    assert f"({CHUNK * chunks:,} messages sealed in {chunks} chunk(s))" in text_out
    assert "dictionar" not in text_out  # named only while an earlier build's are left
    assert f"database   {db}" in text_out and "sessions   7" in text_out and "/work/gamma" in text_out


def _old_file(tmp_path: Path) -> Path:
    """Sessions last updated in 2020, 2021 and 2022 (import keeps times), with a shared image."""

    photo = b"\x89PNG" + bytes(4000)
    sessions = []
    for i, year in enumerate((2020, 2021, 2022)):
        stamp = f"{year}-06-01T00:00:00.000+00:00"
        sessions.append(
            {
                "id": f"old-{year}",
                "project": "/old" if i < 2 else "/other",
                "created_at": stamp,
                "updated_at": stamp,
                "message_count": 1,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image", "media_type": "image/png", "data": _b64(photo)}],
                        "created_at": stamp,
                    }
                ],
            }
        )
    file = tmp_path / "old.json"
    file.write_text(json.dumps({"format": "axio-context", "version": 1, "sessions": sessions}))
    return file


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def test_prune(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_sessions(db, {"recent": [text("user", "new")]})
    invoke("import", _old_file(tmp_path))

    dry = invoke_json("prune", "--before", "2021-12-31", "--dry-run", "--json")
    assert [s["session_id"] for s in dry] == ["old-2021", "old-2020"]
    assert "2 session(s) would be deleted" in invoke("prune", "--before", "2021-12-31", "--dry-run").stderr
    assert len(invoke_json("list-sessions", "--json")) == 4

    assert [
        s["session_id"]
        for s in invoke_json("prune", "--keep", "1", "--project", "/old", "--dry-run", "--json")
    ] == ["old-2020"]
    nl = invoke("prune", "--before", "2021-12-31", "--dry-run", "--nl").stdout.splitlines()
    assert [json.loads(line)["session_id"] for line in nl] == ["old-2021", "old-2020"]
    both = invoke_json("prune", "--keep", "2", "--before", "2021-12-31", "--dry-run", "--json")
    assert [s["session_id"] for s in both] == ["old-2021", "old-2020"]

    monkeypatch.chdir(tmp_path)
    assert invoke_json("prune", "--keep", "0", "--here", "--dry-run", "--json") == []
    declined = invoke("prune", "--before", "2021-12-31", input="n\n")
    assert declined.exit_code == 0 and len(invoke_json("list-sessions", "--json")) == 4
    assert invoke("prune", "--before", "2021-12-31", "--yes").stdout == "deleted 2 session(s)\n"
    assert [s["session_id"] for s in invoke_json("list-sessions", "--json")] == ["recent", "old-2022"]
    assert sqlite3.connect(db).execute("SELECT refs FROM blobs").fetchall() == [(1,)]
    deleted = invoke_json("prune", "--keep", "1", "--yes", "--json")
    assert [s["session_id"] for s in deleted] == ["old-2022"]
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM blobs").fetchone() == (0,)
    nothing = invoke("prune", "--keep", "1")
    assert (nothing.stdout, nothing.stderr) == ("", "nothing to prune\n")
    assert invoke_json("prune", "--keep", "1", "--json") == []
    check_storage(db)
    assert invoke("prune", ok=False).exit_code == 2
    assert invoke("prune", "--keep", "-1", ok=False).exit_code == 2


def test_prune_keeps_forks_of_pruned_sessions(rich: dict[str, str], db: Path) -> None:
    invoke("title", rich["grandchild"], "most recent")  # now the most recently updated
    before = _standing_alone(invoke_json("show", rich["grandchild"], "--json", "--full"))
    pruned = invoke_json("prune", "--project", "/work/alpha", "--keep", "3", "--yes", "--json")
    assert [s["session_id"] for s in pruned] == [rich["child"]]  # the least recently updated
    ids = {s["session_id"] for s in invoke_json("list-sessions", "--json")}
    assert rich["child"] not in ids and len(ids) == 6
    assert invoke_json("show", rich["grandchild"], "--json", "--full") == before
    check_storage(db)


def test_vacuum_recompress(db: Path) -> None:
    """On a database with nothing an earlier build compressed with a dictionary it rewrites
    nothing; on one with such rows it rewrites them all, says so, and stats stops naming them."""
    rng = random.Random(5)
    sessions = {
        f"s{i}": [text("user", prose(rng, 150)), text("assistant", prose(rng, 20))] for i in range(110)
    }
    make_sessions(db, sessions)
    first, _ = invoke("vacuum", "--recompress").stdout.splitlines()
    assert first == "recompressed 0 payload(s): 0 B -> 0 B; 0 dictionary(ies) deleted"
    named = use_dictionaries(db, dictionaries=2)
    assert "2 old compression dictionary(ies): vacuum --recompress removes them" in invoke("stats").stdout
    first, second = invoke("vacuum", "--recompress").stdout.splitlines()
    assert first.startswith(f"recompressed {named:,} payload(s): ")
    assert first.endswith("; 2 dictionary(ies) deleted")
    assert second.startswith("full vacuum: ")  # rows shrank in place: only a rebuild packs them
    s = invoke_json("stats", "--json")
    assert s["dictionaries"] == scalar(db, "SELECT COUNT(*) FROM zstd_dicts") == 0
    assert scalar(db, "SELECT COUNT(*) FROM messages WHERE flags >> 8") == 0
    assert [m["content"][0]["text"] for m in invoke_json("show", "s7", "--json")["messages"]] == [
        m.text for m in sessions["s7"]
    ]
    check_storage(db)


def test_vacuum_incremental_and_full(db: Path) -> None:
    # a new database is created with auto_vacuum=INCREMENTAL: vacuum needs no copy of the file
    make_sessions(
        db, {f"s{i}": [text("user", secrets.token_hex(1500)) for _ in range(20)] for i in range(30)}
    )
    invoke("rm", "-y", *[f"s{i}" for i in range(1, 30)])
    grown = invoke_json("stats", "--json")
    assert grown["free_pages"] > 50
    assert invoke("vacuum").stdout.startswith("incremental vacuum: ")
    shrunk = invoke_json("stats", "--json")
    assert shrunk["free_pages"] == 0 and shrunk["page_count"] < grown["page_count"]
    assert shrunk["wal_bytes"] == 0  # the WAL was truncated

    # an older file without it gets SQLite's full VACUUM
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA auto_vacuum = NONE")
    raw.execute("VACUUM")
    raw.close()
    make_sessions(
        db, {f"t{i}": [text("user", secrets.token_hex(1500)) for _ in range(20)] for i in range(10)}
    )
    invoke("rm", "-y", *[f"t{i}" for i in range(10)])
    pages = invoke_json("stats", "--json")
    assert pages["free_pages"] > 50
    assert invoke("vacuum").stdout.startswith("full vacuum: ")
    after = invoke_json("stats", "--json")
    assert after["free_pages"] == 0 and after["page_count"] < pages["page_count"]
    assert after["wal_bytes"] == 0
    assert invoke_json("show", "s0", "--json")["session"]["message_count"] == 20


def test_backup(rich: dict[str, str], db: Path, tmp_path: Path) -> None:
    dest = tmp_path / "backups" / "copy.db"
    out = invoke("backup", dest).stdout
    assert out.startswith(f"backed up {db} to {dest} (")
    assert invoke("--db", dest, "export", "--all").stdout == invoke("export", "--all").stdout
    check_storage(dest)
    exists = invoke("backup", dest, ok=False)
    said = f"Error: {dest} already exists; use --force to replace it\n"
    assert (exists.exit_code, exists.stderr) == (1, said)
    invoke("rm", "-y", "long-session")
    invoke("backup", dest, "--force")
    assert len(invoke_json("--db", dest, "list-sessions", "--json")) == 6
    assert invoke("backup", db, "--force", ok=False).stderr == f"Error: {db} is the database itself\n"


def test_backup_while_another_connection_writes(db: Path, tmp_path: Path) -> None:
    make_sessions(db, {"busy": [text("user", "start")]})

    async def scenario() -> None:
        async with connect(db) as conn:
            store = SQLiteContextStore(conn, "busy", project="/p")
            stop = asyncio.Event()

            async def writer() -> None:
                i = 0
                while not stop.is_set():
                    await store.append_many([text("user", f"q{i}"), text("assistant", f"a{i}")])
                    i += 1
                    await asyncio.sleep(0)

            task = asyncio.create_task(writer())
            await asyncio.sleep(0.05)
            await asyncio.to_thread(invoke, "backup", tmp_path / "live.db")
            stop.set()
            await task

    asyncio.run(scenario())
    check_storage(tmp_path / "live.db")
    [row] = invoke_json("--db", tmp_path / "live.db", "list-sessions", "--json")
    assert row["message_count"] % 2 == 1  # whole transactions only: "start" plus pairs


# --- completion ----------------------------------------------------------------------------------


def test_shell_completion_of_session_ids(rich: dict[str, str]) -> None:
    from click.testing import CliRunner

    def complete(words: str) -> list[str]:
        env = {
            "_AXIO_CONTEXT_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        }
        result = CliRunner().invoke(cli, [], env=env, prog_name="axio-context", catch_exceptions=False)
        return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line]

    assert complete("axio-context show ro") == ["root-session"]
    assert complete("axio-context export long tok") == ["tokens-only"]
    assert sorted(complete(f"axio-context rm {rich['child'][:6]}")) == sorted(
        i for i in rich.values() if i.startswith(rich["child"][:6])
    )
    assert complete("axio-context show zz") == []


def test_python_dash_m_entry_point_module() -> None:
    import axio_context_sqlite.__main__ as entry
    import axio_context_sqlite.cli as cli_package

    assert entry.main is cli_package.main


def test_every_block_type_survives_show_json(db: Path) -> None:
    make_sessions(db, {"blocks": every_block_message()})
    doc = invoke_json("show", "blocks", "--json")
    messages = [Message.from_dict({"role": m["role"], "content": m["content"]}) for m in doc["messages"]]
    assert messages == every_block_message()
    assert TextBlock(text="done") in messages[4].content
