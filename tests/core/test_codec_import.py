"""Importing exports through the real SQLite store: what the format sniffing must get right."""

from __future__ import annotations

from pathlib import Path

from axio_context.compaction import summary_messages
from axio_context.transcript import (
    CheckpointRecord,
    JsonlWriter,
    MessageRecord,
    SessionHeader,
    format_time,
)
from axio_context_sqlite import Database, SQLiteContextStore, connect

T = format_time(1_700_000_000_000)


async def test_jsonl_whose_first_line_passes_64_kib_imports(tmp_path: Path) -> None:
    """17 compactions of ~4 KB summaries: the session line is longer than the importer's head."""
    checkpoints = [
        CheckpointRecord(id=i + 1, position=10 * (i + 1), summary=summary_messages("s" * 4000), created_at=T)
        for i in range(17)
    ]
    header = SessionHeader(id="s1", created_at=T, updated_at=T, message_count=200, checkpoints=checkpoints)
    records = [MessageRecord(role="user", content=[], created_at=T)] * 200
    w = JsonlWriter()
    data = (
        b"\n" + w.begin() + w.session(header) + w.messages(header, 0, records) + w.end()
    )  # a blank line first
    assert len(data.split(b"\n")[1]) > 1 << 16
    (tmp_path / "big.jsonl").write_bytes(data)
    path = tmp_path / "db.sqlite"
    async with connect(path) as conn:
        report = await Database(conn, path).import_file(tmp_path / "big.jsonl")
        assert report.format == "jsonl"
        assert len(await SQLiteContextStore(conn, "s1").get_history()) == 2 + 200 - 170  # summary pair + tail
