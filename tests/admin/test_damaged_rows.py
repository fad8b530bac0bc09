"""A database holding an undecodable row (a disk fault, an older version): reads name the row,
exports go on without it, ``check`` finds it and ``quarantine`` moves it aside, on real files."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from pathlib import Path

import pytest

from axio_context import ImageBlock, Message, TextBlock
from axio_context.errors import CorruptDataError
from axio_context.testing import text
from axio_context.transcript import iter_jsonl
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.database import DamagedRow, open_database
from axio_context_sqlite.store import chunks
from tests.support.cli_helpers import invoke
from tests.support.sqlite_checks import check_storage, raw_connect

GARBAGE = b"\xc1\xc1 not a message"


async def _build(path: Path) -> None:
    async with connect(path) as conn:
        s = SQLiteContextStore(conn, "hurt", project="/p")
        await s.append_many([text("user", "q0"), text("assistant", "a1"), text("user", "q2")])
        await SQLiteContextStore(conn, "fine", project="/p").append_many([text("user", "fine q")])
    async with open_database(path) as db:
        await db.fork("hurt", "hurt-fork")
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "hurt-fork").append(text("assistant", "fork a3"))


def _corrupt(path: Path, session: str, position: int, payload: bytes = GARBAGE) -> None:
    """Overwrite one stored payload with raw SQL, as a disk fault or an old writer would."""
    db = raw_connect(path)
    try:
        (sid,) = db.execute("SELECT sid FROM sessions WHERE id = ?", (session,)).fetchone()
        n = db.execute(
            "UPDATE messages SET flags = 0, payload = ? WHERE id = ?", (payload, (sid << 32) | position)
        ).rowcount
        assert n == 1
        db.commit()
    finally:
        db.close()


async def test_reads_name_the_damaged_row(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    await _build(path)
    _corrupt(path, "hurt", 1)
    async with open_database(path) as db:
        named = r"session 'hurt' position 1: stored message does not decode"
        with pytest.raises(CorruptDataError, match=named):
            await db.show("hurt", full=True)
        # a fork reads the same row, and names the position in its own transcript
        with pytest.raises(CorruptDataError, match=r"session 'hurt-fork' position 1"):
            await db.show("hurt-fork", full=True)
        assert [m.role for m in (await db.show("fine")).messages] == ["user"]  # the rest reads
    async with connect(path) as conn:
        with pytest.raises(CorruptDataError, match=r"'hurt' position 1"):
            await SQLiteContextStore(conn, "hurt").get_history()


async def test_export_leaves_the_damaged_row_out_and_reports_it(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    await _build(path)
    _corrupt(path, "hurt", 1)
    async with open_database(path) as db:
        with pytest.raises(CorruptDataError, match=r"'hurt' position 1"):  # strict by default
            await db.export(lambda _: None, format="jsonl")
        out = io.BytesIO()
        summary = await db.export(out.write, format="jsonl", skip_damaged=True)
    assert summary.sessions == 3
    assert [(s.session_id, s.position) for s in summary.skipped] == [("hurt", 1)]
    assert "does not decode" in summary.skipped[0].reason
    assert summary.messages == 3 + 1 + 1 - 1  # hurt's 3 (one left out), the fork's own, fine's
    records = {r.id: r for r in iter_jsonl(io.BytesIO(out.getvalue()))}
    hurt = [m.message() for m in records["hurt"].messages]
    assert [m.content[0].text for m in (hurt[0], hurt[2])] == ["q0", "q2"]  # type: ignore[union-attr]
    assert "left out of this export" in hurt[1].content[0].text  # type: ignore[union-attr]
    assert hurt[1].role == "assistant"  # the stored role code still reads
    assert records["hurt-fork"].inherited == 3 and len(records["hurt-fork"].messages) == 1

    # the export imports, whole: positions and lineage kept
    copy = tmp_path / "copy.db"
    (tmp_path / "out.jsonl").write_bytes(out.getvalue())
    async with open_database(copy) as db:
        report = await db.import_file(tmp_path / "out.jsonl")
        assert [s.id for s in report.sessions] == ["hurt", "fine", "hurt-fork"]
        assert len((await db.show("hurt-fork", full=True)).messages) == 4


async def test_check_finds_the_row_and_quarantine_moves_it_keeping_positions(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    await _build(path)
    _corrupt(path, "hurt", 1)
    async with open_database(path) as db:
        report = await db.check()
        assert not report.ok and report.quick_check == [] and report.problems == []
        assert [(d.session_id, d.position, d.kind) for d in report.damaged] == [("hurt", 1, "message")]
        assert report.messages_checked == 5 and report.quarantined == 0

        moved = await db.check(quarantine=True)
        assert moved.ok and moved.moved == report.damaged and moved.quarantined == 1
        assert await db.quarantine() == []  # nothing left to move

        after = await db.check()
        assert after.ok and after.damaged == [] and after.quarantined == 1
        [q] = await db.quarantined()
        assert (q.session_id, q.position, q.count, q.kind, q.role) == ("hurt", 1, 1, "message", 1)
        assert q.payload == GARBAGE and "does not decode" in q.reason

        # positions stay dense: the session and its fork read whole, a placeholder at 1
        view = await db.show("hurt", full=True)
        assert len(view.messages) == 3 and view.header.message_count == 3
        assert "was quarantined" in view.messages[1].content[0].text  # type: ignore[union-attr]
        assert view.messages[2].content[0].text == "q2"  # type: ignore[union-attr]
        fork = await db.show("hurt-fork", full=True)
        assert [r.role for r in fork.messages] == ["user", "assistant", "user", "assistant"]
        assert (await db.export(lambda _: None, format="json")).skipped == []
    check_storage(path)  # rows, blob references and the keyword index still agree


async def test_quarantine_moves_only_rows_still_damaged(tmp_path: Path) -> None:
    """A report gone stale (the row was restored meanwhile) moves nothing."""
    path = tmp_path / "d.db"
    await _build(path)
    row = "(SELECT sid << 32 | 1 FROM sessions WHERE id = 'hurt')"
    db_raw = raw_connect(path)
    good = db_raw.execute(f"SELECT flags, payload FROM messages WHERE id = {row}").fetchone()
    db_raw.close()
    _corrupt(path, "hurt", 1)
    async with open_database(path) as db:
        report = await db.check()
    db_raw = raw_connect(path)
    db_raw.execute(f"UPDATE messages SET flags = ?, payload = ? WHERE id = {row}", good)
    db_raw.commit()
    db_raw.close()
    async with open_database(path) as db:
        assert await db.quarantine(report.damaged) == []
        assert await db.quarantined() == []
        assert (await db.show("hurt", full=True)).messages[1].content[0].text == "a1"  # type: ignore[union-attr]


async def test_a_damaged_sealed_chunk_is_quarantined_whole(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    async with connect(path) as conn:
        s = SQLiteContextStore(conn, "long", project="/p")
        await s.append_many([text("user", f"m{i}") for i in range(chunks.SEAL_TAIL + 2 * chunks.CHUNK)])
    async with open_database(path) as db:
        await db.vacuum()  # seals what the appends' folds did not
    db_raw = raw_connect(path)
    (first,) = db_raw.execute("SELECT min(id) FROM chunks").fetchone()
    assert first is not None
    db_raw.execute("UPDATE chunks SET payload = ? WHERE id = ?", (GARBAGE, first))
    db_raw.commit()
    db_raw.close()
    async with open_database(path) as db:
        report = await db.check()
        assert [(d.session_id, d.position, d.count, d.kind) for d in report.damaged] == [
            ("long", first & 0xFFFFFFFF, chunks.CHUNK, "chunk")
        ]
        assert await db.quarantine() == report.damaged
        assert (await db.check()).ok
        view = await db.show("long", full=True)
        total = chunks.SEAL_TAIL + 2 * chunks.CHUNK
        assert len(view.messages) == total
        lo = first & 0xFFFFFFFF
        assert all("quarantined" in m.content[0].text for m in view.messages[lo : lo + chunks.CHUNK])  # type: ignore[union-attr]
        assert view.messages[-1].content[0].text == f"m{total - 1}"  # type: ignore[union-attr]
        [q] = await db.quarantined()
        assert q.kind == "chunk" and q.payload == GARBAGE


async def test_check_reports_positions_without_rows(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    await _build(path)
    db_raw = raw_connect(path)
    db_raw.execute("DELETE FROM messages WHERE id = (SELECT sid << 32 | 0 FROM sessions WHERE id = 'fine')")
    db_raw.commit()
    db_raw.close()
    async with open_database(path) as db:
        report = await db.check()
    assert not report.ok and report.damaged == []
    assert report.problems == ["session 'fine': positions 0..0 have 0 stored rows"]


def test_damaged_row_is_a_struct() -> None:
    assert DamagedRow("s", 1, "why").count == 1


# --- the command line ----------------------------------------------------------------------------


def test_cli_check_quarantine_and_export_with_a_damaged_row(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    asyncio.run(_build(path))
    _corrupt(path, "hurt", 1)

    found = invoke("--db", path, "check", "--json", ok=False)
    assert found.exit_code == 1
    doc = json.loads(found.stdout)
    assert not doc["ok"] and doc["moved"] == [] and doc["quarantined"] == 0
    assert [(d["session_id"], d["position"]) for d in doc["damaged"]] == [("hurt", 1)]
    people = invoke("--db", path, "doctor", ok=False)  # the alias
    assert (
        people.exit_code == 1 and "session 'hurt' position 1: stored message does not decode" in people.stdout
    )
    assert "Traceback" not in people.output

    # export --all leaves it out, names it on stderr and in its summary; --strict fails
    out = tmp_path / "all.jsonl"
    exported = invoke("--db", path, "export", "--all", "-f", "jsonl", "-o", out)
    assert "left out session 'hurt' position 1" in exported.stderr
    assert "1 left out (damaged)" in exported.stderr
    assert [r.id for r in iter_jsonl(io.BytesIO(out.read_bytes()))] == ["hurt", "fine", "hurt-fork"]
    strict = invoke("--db", path, "export", "--all", "--strict", "-o", tmp_path / "strict.json", ok=False)
    assert strict.exit_code == 1 and "'hurt' position 1" in strict.stderr and "Traceback" not in strict.output
    assert not (tmp_path / "strict.json").exists()

    moved = invoke("--db", path, "check", "--quarantine", "--json")
    doc = json.loads(moved.stdout)
    assert doc["ok"] and [d["position"] for d in doc["moved"]] == [1] and doc["quarantined"] == 1
    listed = json.loads(invoke("--db", path, "check", "--list-quarantine", "--json").stdout)
    assert [(q["session_id"], q["position"]) for q in listed] == [("hurt", 1)]
    assert base64.b64decode(listed[0]["payload"]) == GARBAGE
    assert invoke("--db", path, "check").stdout.splitlines()[-1] == "ok"


async def test_check_finds_a_row_whose_media_blob_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "pic", project="/p").append(
            Message(role="user", content=[TextBlock(text="look"), ImageBlock("image/png", bytes(4096))])
        )
    async with open_database(path) as db:
        assert (await db.check()).ok
    db_raw = raw_connect(path)
    db_raw.execute("DELETE FROM blobs")
    db_raw.commit()
    db_raw.close()
    async with open_database(path) as db:
        [d] = (await db.check()).damaged
        assert (d.session_id, d.position) == ("pic", 0) and "media blob" in d.reason
