"""Data this version does not understand is kept as it came (issue 17, item 6): fields of a newer
version on a KNOWN block type, and bytes inside an unknown block, through storage (a real SQLite
file), get_history, a JSON export and its import."""

from __future__ import annotations

from pathlib import Path

from axio_context import Message, TextBlock, codec
from axio_context.blocks import ToolResultBlock, UnknownBlock, from_dict, to_dict
from axio_context.transcript import iter_jsonl
from axio_context_sqlite import SQLiteContextStore, connect, open_database

NEWER_TEXT = {"type": "text", "text": "hello", "citations": [{"url": "https://x"}]}
NEWER_CALL = {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}, "caller": {"kind": "code"}}
NEWER_NESTED = {
    "type": "tool_result",
    "tool_use_id": "c1",
    "content": [{"type": "text", "text": "out", "cache_control": {"type": "ephemeral"}}],
    "is_error": False,
}


def _newer() -> list[Message]:
    return [
        Message(role="user", content=[UnknownBlock(dict(NEWER_TEXT)), TextBlock(text="plain")]),
        Message(role="assistant", content=[UnknownBlock(dict(NEWER_CALL))]),
        Message(role="user", content=[UnknownBlock(dict(NEWER_NESTED))]),
    ]


def test_known_type_with_unknown_fields_is_kept_whole_by_every_decoder() -> None:
    for data in (NEWER_TEXT, NEWER_CALL, NEWER_NESTED):
        stored = codec.encode_content([UnknownBlock(data)])
        assert codec.decode_content(stored) == [UnknownBlock(data)]
        assert codec.decode_content_json(codec.encode_json([UnknownBlock(data)])) == [UnknownBlock(data)]
        assert from_dict(data) == UnknownBlock(data)
        assert to_dict(from_dict(data)) == data
    # a block that fits decodes as before
    assert codec.decode_content_json(b'[{"type":"text","text":"x"}]') == [TextBlock(text="x")]
    assert from_dict({"type": "tool_result", "tool_use_id": "c", "content": "x"}) == ToolResultBlock("c", "x")


async def test_newer_fields_round_trip_through_sqlite_export_and_import(tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    async with connect(first) as conn:
        await SQLiteContextStore(conn, "s").append_many(_newer())
        assert await SQLiteContextStore(conn, "s").get_history() == _newer()
    chunks: list[bytes] = []
    async with open_database(first) as db:
        await db.export(chunks.append, format="jsonl")
    exported = b"".join(chunks)
    [record] = list(iter_jsonl(exported.splitlines()))
    assert [m.message() for m in record.messages] == _newer()
    assert b'"citations":[{"url":"https://x"}]' in exported and b'"cache_control"' in exported
    path = tmp_path / "s.jsonl"
    path.write_bytes(exported)
    async with open_database(second) as db:
        await db.import_file(path)
    async with connect(second) as conn:
        assert await SQLiteContextStore(conn, "s").get_history() == _newer()


async def test_bytes_in_an_unknown_block_stay_bytes_in_storage(tmp_path: Path) -> None:
    odd = UnknownBlock({"type": "hologram", "blob": b"\x00\xff", "frames": [b"ab", {"raw": b""}]})
    sent = [Message(role="user", content=[TextBlock(text=f"m{i}"), odd]) for i in range(300)]
    async with connect(tmp_path / "u.db") as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append(sent[0])
        await store.append_many(sent[1:])
    async with connect(tmp_path / "u.db") as conn:
        got = await SQLiteContextStore(conn, "s").get_history()
    assert got == sent
    assert all(type(m.content[1].data["blob"]) is bytes for m in got)  # type: ignore[union-attr]
    # JSON has no bytes: the export writes them as the codec writes every bytes value, base64
    assert codec.encode_json([odd]) == b'[{"type":"hologram","blob":"AP8=","frames":["YWI=",{"raw":""}]}]'
