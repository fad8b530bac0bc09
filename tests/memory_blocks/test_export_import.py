"""Memory blocks in the main ``export``/``import`` (format version 2): a whole-database export
carries every block with its history, undo stack and attachments, and an import brings them back
as they were, on both backends (the library's fixture: SQLite and the real PostgreSQL server);
an export of chosen sessions leaves them out unless ``--blocks``; bad block records are refused
with one line, and nothing is written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axio_context import Message, TextBlock
from axio_context.backends.registry import open_database
from axio_context.memory_blocks import BlockError, MemoryBlock
from tests.support.cli_helpers import invoke
from tests.support.postgres import new_database

from .sample import dump_blocks, fill_blocks


async def _sessions(where: str) -> list[str]:
    async with open_database(where) as db:
        return [i.session_id for i in (await db.list_sessions()).sessions]


@pytest.fixture
def other_db(axio_backend_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh database on the other backend (so each direction is tested once)."""
    if axio_backend_name == "sqlite":
        return new_database(request.getfixturevalue("pg_server"), "axio_blocks_export")
    return str(tmp_path / "other.db")


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_export_all_carries_blocks_and_import_brings_them_back(
    fmt: str, axio_database_location: str, other_db: str, tmp_path: Path
) -> None:
    rows = asyncio.run(fill_blocks(axio_database_location, with_session=True))
    out = tmp_path / f"all.{fmt}"
    result = invoke("--db", axio_database_location, "export", "--all", "-f", fmt, "-o", out)
    assert "1 session(s), 1 message(s), 2 memory block(s)" in result.stderr
    if fmt == "json":
        doc = json.loads(out.read_text())
        assert doc["version"] == 2 and len(doc["blocks"]) == 2
    else:
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert [line["kind"] for line in lines] == ["session", "message", "block", "block"]
        assert {line["version"] for line in lines if "version" in line and "kind" in line} == {2}
    target = other_db
    shown = invoke("--db", target, "import", out).stdout
    assert "1 session(s), 1 message(s), 2 memory block(s)" in shown
    assert asyncio.run(dump_blocks(target)) == rows
    assert asyncio.run(_sessions(target)) == ["s1"]
    # the undo stack works on the other side
    redo = invoke("--db", target, "blocks", "redo", "human", "--agent", "a", "--json").stdout
    assert json.loads(redo)["value"] == "Ada\nlikes tea"
    # a block already there: refused, nothing written (not the sessions either); --replace wins
    invoke("--db", target, "rm", "s1", "--yes")
    refused = invoke("--db", target, "import", out, ok=False)
    assert refused.exit_code == 1 and refused.stderr.count("\n") == 1
    assert "memory block(s)" in refused.stderr and "--replace" in refused.stderr
    assert asyncio.run(_sessions(target)) == []
    invoke("--db", target, "import", out, "--replace")
    assert asyncio.run(dump_blocks(target)) == rows


def test_chosen_sessions_leave_blocks_out_unless_asked(axio_database_location: str, tmp_path: Path) -> None:
    asyncio.run(fill_blocks(axio_database_location, with_session=True))
    db = axio_database_location
    plain = invoke("--db", db, "export", "s1").stdout
    assert json.loads(plain)["version"] == 1 and "blocks" not in json.loads(plain)
    assert len(json.loads(invoke("--db", db, "export", "s1", "--blocks").stdout)["blocks"]) == 2
    assert "blocks" not in json.loads(invoke("--db", db, "export", "--all", "--no-blocks").stdout)
    markdown = invoke("--db", db, "export", "--all", "-f", "markdown").stdout
    assert "# Memory blocks" in markdown and "## `team` (shared)" in markdown
    assert "\x1b" not in markdown  # stored text is shown through visible()


def test_an_export_without_blocks_is_the_version_1_file(axio_database_location: str) -> None:
    async def one_session() -> None:
        async with open_database(axio_database_location) as db:
            await db.store("s1", project="/p").append(Message(role="user", content=[TextBlock(text="hi")]))

    asyncio.run(one_session())
    for fmt in ("json", "jsonl"):
        text = invoke("--db", axio_database_location, "export", "--all", "-f", fmt).stdout
        assert '"version":1' in text and '"version":2' not in text and "blocks" not in text


_BLOCK = {
    "id": "b1",
    "agent_id": "a",
    "label": "notes",
    "value": "x",
    "char_limit": 10,
    "description": "",
    "read_only": False,
    "version": 1,
    "created_at": 0,
    "updated_at": 0,
    "versions": [
        {"version": 1, "action": "create", "label": "notes", "value": "x", "char_limit": 10,
         "description": "", "read_only": False, "undo_to": None, "redo_to": None, "agent_id": "a",
         "run_id": "", "created_at": 0}
    ],
    "agents": [],
}  # fmt: skip
_SESSION = {
    "id": "s9",
    "created_at": "2024-01-01T00:00:00.000+00:00",
    "updated_at": "2024-01-01T00:00:00.000+00:00",
    "message_count": 0,
    "messages": [],
}


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"value": "x" * 11}, "$.blocks[0].value: 11 characters, over the block's limit of 10"),
        ({"colour": "red"}, "colour"),
        ({"label": ""}, "$.blocks[0]: a block label must not be empty"),
        ({"char_limit": "ten"}, "$.blocks[0].char_limit"),
        ({"version": 7}, "$.blocks[0].version: 7 is not one of its versions"),
        (
            {"versions": [{**_BLOCK["versions"][0], "undo_to": 5}]},  # type: ignore[index]
            "$.blocks[0].versions[0].undo_to: 5 is not one of the block's versions",
        ),
        ({"versions": [{**_BLOCK["versions"][0], "mood": 1}]}, "mood"),  # type: ignore[index]
    ],
)
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_a_bad_block_record_is_refused_and_nothing_is_written(
    fmt: str, change: dict[str, object], named: str, axio_database_location: str, tmp_path: Path
) -> None:
    block = {**_BLOCK, **change}
    path = tmp_path / f"bad.{fmt}"
    if fmt == "json":
        path.write_text(
            json.dumps({"format": "axio-context", "version": 2, "sessions": [_SESSION], "blocks": [block]})
        )
    else:
        head = {"kind": "session", "format": "axio-context", "version": 2, **_SESSION}
        del head["messages"]
        line = {"kind": "block", "format": "axio-context", "version": 2, "block": block}
        path.write_text(json.dumps(head) + "\n" + json.dumps(line) + "\n")
        named = named.replace("$.blocks[0]", "$.block")
    result = invoke("--db", axio_database_location, "import", path, ok=False)
    assert result.exit_code == 1 and result.stderr.startswith("Error: ")
    assert result.stderr.count("\n") == 1 and named in result.stderr, result.stderr
    assert fmt == "json" or result.stderr.startswith("Error: line 2: ")
    assert asyncio.run(_sessions(axio_database_location)) == []
    assert asyncio.run(dump_blocks(axio_database_location)) == []


def test_a_newer_version_is_refused_and_version_1_still_reads(tmp_path: Path) -> None:
    """A file newer than this reader is refused by its version (as a version 1 reader refuses a
    version 2 file), not by a confusing field; a version 1 file reads as it always did."""
    from axio_context.errors import TranscriptError
    from axio_context.transcript import readers

    data = json.dumps({"format": "axio-context", "version": 3, "sessions": []}).encode()
    with pytest.raises(TranscriptError, match="version 3 is newer than the 2"):
        readers.read_json(data)
    old = json.dumps({"format": "axio-context", "version": 1, "sessions": [_SESSION]}).encode()
    assert [r.id for r in readers.read_json(old)] == ["s9"]


PROPERTY = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_edits = st.lists(
    st.tuples(st.sampled_from(["set", "append", "undo", "redo"]), st.text(max_size=40)), max_size=5
)


@PROPERTY
@given(
    blocks=st.lists(
        st.tuples(st.text(min_size=1, max_size=30), st.text(max_size=60), st.text(max_size=20), _edits),
        max_size=3,
    ),
    fmt=st.sampled_from(["json", "jsonl"]),
)
def test_what_is_exported_imports_back_equal(
    blocks: list[tuple[str, str, str, list[tuple[str, str]]]],
    fmt: str,
    axio_database_location: str,
    other_db: str,
    tmp_path: Path,
) -> None:
    """Any blocks the store accepts (labels, values, descriptions, edits and undos generated),
    exported whole from one backend and imported into the other, read back equal (the examples
    share the two databases: each import replaces what the last one wrote)."""
    target = other_db

    async def run() -> None:
        async with open_database(axio_database_location) as src, open_database(target) as dst:
            store = src.memory_stores().blocks()
            for label, value, description, edits in blocks:
                try:
                    await store.create(MemoryBlock(label, value, description=description), agent_id="p")
                except BlockError:
                    continue
                for action, text in edits:
                    try:
                        if action in ("set", "append"):
                            await getattr(store, action)(label, text, agent_id="p")
                        else:
                            await getattr(store, action)(label, agent_id="p")
                    except BlockError:
                        pass
            chunks: list[bytes] = []
            await src.export(chunks.append, format="json" if fmt == "json" else "jsonl")
            path = tmp_path / f"whole.{fmt}"
            path.write_bytes(b"".join(chunks))
            await dst.import_file(path, replace=True)
            assert await dst.memory_stores().blocks().dump() == await store.dump()

    asyncio.run(run())


def test_the_same_block_twice_is_refused(axio_database_location: str, tmp_path: Path) -> None:
    path = tmp_path / "twice.json"
    twin = {**_BLOCK, "id": "b2"}
    path.write_text(
        json.dumps({"format": "axio-context", "version": 2, "sessions": [], "blocks": [_BLOCK, twin]})
    )
    result = invoke("--db", axio_database_location, "import", path, ok=False)
    assert result.stderr == "Error: $.blocks[1].label: a/notes appears twice\n"
    assert asyncio.run(dump_blocks(axio_database_location)) == []


def test_a_deleted_block_goes_across_deleted_with_its_history(
    axio_database_location: str, tmp_path: Path
) -> None:
    async def fill() -> None:
        async with open_database(axio_database_location) as db:
            s = db.memory_stores().blocks()
            await s.create(MemoryBlock("old", "gone soon"), agent_id="a")
            await s.delete("old", agent_id="a")

    asyncio.run(fill())
    out = tmp_path / "all.json"
    out.write_text(invoke("--db", axio_database_location, "export", "--all").stdout)
    assert (
        "- deleted (an undo brings it back)"
        in invoke("--db", axio_database_location, "export", "--all", "-f", "markdown").stdout
    )
    target = tmp_path / "other.db"
    invoke("--db", target, "import", out)
    assert json.loads(invoke("--db", target, "blocks", "--all", "--json").stdout) == []
    back = json.loads(invoke("--db", target, "blocks", "undo", "old", "--agent", "a", "--json").stdout)
    assert (back["value"], back["version"]) == ("gone soon", 3)
