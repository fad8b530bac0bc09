"""Issue 17's rough edges in the admin commands, on real files through the library and CliRunner."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from tests.support.cli_helpers import invoke, invoke_json, make_sessions


async def _parent_and_fork(path: Path) -> str:
    async with connect(path) as conn:
        parent = SQLiteContextStore(conn, "parent", project="/p")
        await parent.append_many([text("user", "a"), text("assistant", "b")])
        fork = await parent.fork()
        await fork.append(text("user", "c"))
        return fork.session_id


async def test_markdown_export_counts_a_forks_shared_messages_once(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    fork = await _parent_and_fork(path)
    async with open_database(path) as db:
        counts = {}
        for fmt in ("json", "jsonl", "markdown"):
            out = io.BytesIO()
            counts[fmt] = (await db.export(out.write, format=fmt)).messages  # type: ignore[arg-type]
        assert counts == {"json": 3, "jsonl": 3, "markdown": 3}
        # the fork alone carries its whole transcript in every format
        alone = await db.export(lambda _: None, format="markdown", session_ids=[fork])
        assert alone.messages == 3


def test_cli_markdown_export_summary(tmp_path: Path) -> None:
    path = tmp_path / "f.db"
    asyncio.run(_parent_and_fork(path))
    result = invoke("--db", path, "export", "--all", "-f", "markdown", "-o", tmp_path / "all.md")
    assert "exported 2 session(s), 3 message(s)" in result.stderr
    assert (tmp_path / "all.md").read_text().count("\n## ") == 5  # markdown repeats the shared two


def test_prune_confirmation_names_the_sessions_bounded(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    make_sessions(path, {f"old-{i:02d}": [text("user", f"q{i}")] for i in range(13)})
    declined = invoke("--db", path, "prune", "--keep", "0", input="n\n")
    assert declined.exit_code == 0  # a refusal is an answer, not an error
    asked = declined.stderr.splitlines()[0]
    assert asked.startswith("Delete 13 session(s): old-12, old-11, ") and " and 3 more? [y/N]" in asked
    assert "old-03" in asked and "old-02" not in asked
    few = tmp_path / "few.db"
    make_sessions(few, {"a": [text("user", "q")], "b": [text("user", "q")]})
    result = invoke("--db", few, "prune", "--keep", "0", input="y\n")
    assert "Delete 2 session(s): b, a? [y/N]" in result.stderr and "deleted 2 session(s)" in result.stdout


def test_backup_onto_an_existing_file_mentions_force(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    make_sessions(path, {"a": [text("user", "q")]})
    (tmp_path / "copy.db").write_bytes(b"earlier")
    result = invoke("--db", path, "backup", tmp_path / "copy.db", ok=False)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: {tmp_path / 'copy.db'} already exists; use --force to replace it"
    ]
    assert (tmp_path / "copy.db").read_bytes() == b"earlier"


def test_export_backup_and_import_all_create_a_missing_folder(tmp_path: Path) -> None:
    path = tmp_path / "src.db"
    make_sessions(path, {"a": [text("user", "q")]})
    out = tmp_path / "new" / "deeper" / "a.json"
    invoke("--db", path, "export", "a", "-o", out)
    assert json.loads(out.read_bytes())["sessions"][0]["id"] == "a"
    copy = tmp_path / "other" / "copy.db"
    invoke("--db", path, "backup", copy)
    assert copy.is_file()
    imported = tmp_path / "third" / "x.db"
    invoke("--db", imported, "import", out)
    assert imported.is_file()


def test_stats_show_the_space_vectors_take(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    make_sessions(path, {"a": [text("user", f"question number {i}") for i in range(40)]})
    empty = invoke_json("--db", path, "stats", "--json")
    assert empty["vectors"] == 0 and empty["vector_bytes"] <= 4 * empty["page_size"]  # the table's root
    invoke("--db", path, "reindex")
    s = invoke_json("--db", path, "stats", "--json")
    assert s["vectors"] == 40
    # 40 float32 embeddings of the hashing embedder's 384 dimensions, at least
    assert s["vector_bytes"] >= empty["vector_bytes"] + 40 * 384 * 4
    table = invoke("--db", path, "stats").stdout
    assert "embeddings 40 message embedding(s), " in table


def test_exports_say_they_carry_no_embeddings_and_reindex_rebuilds_them(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    make_sessions(path, {"a": [text("user", "alpha beta"), text("assistant", "gamma")]})
    invoke("--db", path, "reindex")
    doc = json.loads(invoke("--db", path, "export", "a").stdout)
    assert doc["embeddings"] is False and "embedding" not in json.dumps(doc["sessions"])
    line = json.loads(invoke("--db", path, "export", "a", "-f", "jsonl").stdout.splitlines()[0])
    assert line["kind"] == "session" and line["embeddings"] is False
    (tmp_path / "a.json").write_text(json.dumps(doc))
    copy = tmp_path / "copy.db"
    invoke("--db", copy, "import", tmp_path / "a.json")
    assert invoke_json("--db", copy, "stats", "--json")["vectors"] == 0
    invoke("--db", copy, "reindex")
    assert invoke_json("--db", copy, "stats", "--json")["vectors"] == 2
