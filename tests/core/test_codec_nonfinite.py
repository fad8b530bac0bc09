"""NaN and infinities: MessagePack stores them; the lossless JSON exports write them as ``NaN``,
``Infinity`` and ``-Infinity`` instead of msgspec's ``null``, and every JSON reader reads them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context import DecodeError, Message, ProviderBlock, TextBlock, ToolUseBlock, UnknownBlock, codec
from axio_context.errors import TranscriptError
from axio_context.transcript import (
    CheckpointRecord,
    MarkdownWriter,
    MessageRecord,
    SessionHeader,
    iter_jsonl,
    read_json,
    writer_for,
)
from axio_context_sqlite import Database, SQLiteContextStore, connect

NAN, INF = float("nan"), float("inf")
T0 = "2024-01-01T00:00:00.000+00:00"

ODD = [
    Message("assistant", [ToolUseBlock(id="c", name="stats", input={"mean": NAN, "max": INF, "min": -INF})]),
    Message("assistant", [ProviderBlock(provider="p", kind="k", data={"scores": [1.5, NAN, [-INF]]})]),
    Message("user", [UnknownBlock({"type": "chart", "y": [INF, 0.25, -0.0]})]),
    Message(
        "assistant", [TextBlock(text="NaN Infinity -Infinity"), ToolUseBlock(id="d", name="x", input={})]
    ),
]


def same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN and -0.0 differs from 0.0 (what "exactly" means here)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, msgspec.Struct | UnknownBlock) and type(a) is type(b):
        return same(
            msgspec.to_builtins(a, enc_hook=lambda o: o.data),
            msgspec.to_builtins(b, enc_hook=lambda o: o.data),
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_exact_json_spells_them_and_plain_json_keeps_msgspecs_null() -> None:
    assert b'"input":{"mean":NaN,"max":Infinity,"min":-Infinity}' in codec.encode_json(ODD[0], exact=True)
    assert b'"input":{"mean":null,"max":null,"min":null}' in codec.encode_json(ODD[0])
    # a message without one is the same bytes either way
    assert codec.encode_json(ODD[3], exact=True) == codec.encode_json(ODD[3])


@pytest.mark.parametrize("message", ODD, ids=range(len(ODD)))
def test_they_round_trip_exactly_through_json_and_msgpack(message: Message) -> None:
    raw = codec.encode_json(message, exact=True)
    assert same(codec.decode_message_json(raw), message)
    assert same(codec.decode_messages_json(codec.encode_json([message, message], exact=True)), [message] * 2)
    assert same(codec.decode_content_json(codec.encode_json(message.content, exact=True)), message.content)
    assert same(codec.decode_message_msgpack(codec.encode_message_msgpack(message)), message)
    assert same(Message.from_dict(json.loads(raw)), message)  # Python's json reads the same text


def test_the_words_inside_strings_stay_strings() -> None:
    raw = b'[{"type":"text","text":"NaN"},{"type":"x","NaN":"Infinity","v":[NaN,"-Infinity"]}]'
    content = codec.decode_content_json(raw)
    assert content[0] == TextBlock(text="NaN")
    assert isinstance(content[1], UnknownBlock)
    assert content[1].data["NaN"] == "Infinity"
    assert math.isnan(content[1].data["v"][0]) and content[1].data["v"][1] == "-Infinity"
    assert codec.decode_json(b'{"a":[Infinity, "NaN"]}', dict[str, Any]) == {"a": [INF, "NaN"]}


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        (b'{"role":"user","content":[{"type":"text","text":NaN}]}', "`$.content[0].text`"),
        (
            b'{"role":"user","content":[{"type":"tool_use","id":Infinity,"name":"x","input":{}}]}',
            "`$.content[0].id`",
        ),
    ],
)
def test_a_number_where_text_belongs_is_still_a_decode_error(raw: bytes, where: str) -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode_message_json(raw)
    assert "Expected `str`, got `float`" in str(info.value) and where in str(info.value)


def test_malformed_json_stays_malformed() -> None:
    with pytest.raises(DecodeError, match="malformed JSON"):
        codec.decode_message_json(b'{"role":"user","content":[NaN')
    with pytest.raises(DecodeError, match="malformed JSON"):
        codec.decode_message_json(b'{"role":"user",NaN:1}')


def test_markdown_shows_them() -> None:
    header = SessionHeader(id="s", created_at=T0, updated_at=T0, message_count=1)
    w = MarkdownWriter()
    out = w.messages(
        header, 0, [MessageRecord(role="assistant", content=ODD[0].content, created_at=T0)]
    ).decode()
    assert '"mean": NaN,\n  "max": Infinity,\n  "min": -Infinity' in out


def _records(messages: list[Message]) -> list[MessageRecord]:
    return [MessageRecord(role=m.role, content=m.content, created_at=T0) for m in messages]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_transcripts_carry_them_in_messages_summaries_and_metadata(fmt: str) -> None:
    header = SessionHeader(
        id="s",
        created_at=T0,
        updated_at=T0,
        message_count=len(ODD),
        metadata={"threshold": -INF},
        checkpoints=[CheckpointRecord(id=1, position=1, summary=ODD[:1], created_at=T0)],
    )
    w = writer_for(fmt)
    records = _records(ODD)
    data = w.begin() + w.session(header) + w.messages(header, 0, records) + w.end_session(header) + w.end()
    assert b'"mean":NaN' in data and b'"threshold":-Infinity' in data
    (back,) = read_json(data) if fmt == "json" else list(iter_jsonl(data.splitlines()))
    assert same(back.messages, records)
    assert same(back.checkpoints, header.checkpoints)
    assert back.metadata == {"threshold": -INF}


def test_a_number_in_a_sessions_text_field_is_named() -> None:
    line = (
        b'{"kind":"session","format":"axio-context","version":1,"id":"s","title":NaN,'
        b'"created_at":"' + T0.encode() + b'","updated_at":"' + T0.encode() + b'","message_count":0}'
    )
    with pytest.raises(TranscriptError, match=r"line 1: Expected `str`, got `float` - at `\$\.title`"):
        list(iter_jsonl([line]))


async def _export(db: Database, fmt: str) -> bytes:
    out: list[bytes] = []
    await db.export(out.append, format=fmt)  # type: ignore[arg-type]
    return b"".join(out)


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
async def test_export_import_export_through_a_real_database(db_path: Path, tmp_path: Path, fmt: str) -> None:
    """Before: the export wrote null, so an import gave back None where NaN was stored."""
    sent = [Message("user", [TextBlock(text="stats please")]), *ODD]
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(sent)
        assert same(await SQLiteContextStore(conn, "s").get_history(), sent)
        data = await _export(Database(conn, db_path), fmt)
    assert b'"mean":NaN,"max":Infinity,"min":-Infinity' in data
    (tmp_path / f"e.{fmt}").write_bytes(data)
    target = tmp_path / "imported.db"
    async with connect(target) as conn:
        db = Database(conn, target)
        await db.import_file(tmp_path / f"e.{fmt}")
        assert same(await SQLiteContextStore(conn, "s").get_history(), sent)
        assert await _export(db, fmt) == data


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
async def test_session_metadata_keeps_them_stored_and_through_export(
    db_path: Path, tmp_path: Path, fmt: str
) -> None:
    """Before: NaN in a session's metadata was stored as null, a lone surrogate raised
    UnicodeEncodeError; now metadata keeps what messages keep, in the file and through exports."""
    metadata = {"nan": math.nan, "inf": -math.inf, "big": 2**70, "name": "caf\udce9", "ok": [1, "x"]}
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append(Message("user", [TextBlock(text="hi")]))
        await store.set_metadata(metadata)
        assert same(await store.get_metadata(), metadata)
        data = await _export(Database(conn, db_path), fmt)
    (tmp_path / f"e.{fmt}").write_bytes(data)
    target = tmp_path / "imported.db"
    async with connect(target) as conn:
        await Database(conn, target).import_file(tmp_path / f"e.{fmt}")
        assert same(await SQLiteContextStore(conn, "s").get_metadata(), metadata)


_floats = st.floats()  # NaN, infinities, -0.0 and subnormals included
_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | _floats | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
_inputs = st.dictionaries(st.text(max_size=6), _values, max_size=4)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.builds(lambda i: Message("assistant", [ToolUseBlock(id="c", name="t", input=i)]), _inputs),
        max_size=3,
    )
)
def test_property_any_float_round_trips_through_the_exact_json(msgs: list[Message]) -> None:
    assert same(codec.decode_messages_json(codec.encode_json(msgs, exact=True)), msgs)
    assert codec.contents_have_nonfinite(m.content for m in msgs) == any(_any_nonfinite(m) for m in msgs)


def _any_nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Message):
        return any(_any_nonfinite(b.input) for b in value.content if isinstance(b, ToolUseBlock))
    if isinstance(value, dict):
        return any(_any_nonfinite(v) for v in value.values())
    if isinstance(value, list):
        return any(_any_nonfinite(v) for v in value)
    return False
