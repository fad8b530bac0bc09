"""Values plain msgspec cannot carry: integers past 64 bits and lone surrogates, stored and
exported exactly (the codec, and the real SQLite store on a file)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context import (
    ContentBlock,
    DecodeError,
    Message,
    ProviderBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    codec,
)
from axio_context.errors import TranscriptError
from axio_context.transcript import (
    CheckpointRecord,
    MarkdownWriter,
    MessageRecord,
    SessionHeader,
    SessionRecord,
    iter_jsonl,
    read_json,
    writer_for,
)
from axio_context_sqlite import Database, SQLiteContextStore, connect
from tests.store.test_compression import transcript
from tests.support.sqlite_checks import check_storage, scalar
from tests.support.strategies import messages as ordinary_messages
from tests.support.strategies import unknown_types

BIG = 2**64  # one past MessagePack's largest integer
SMALL = -(2**63) - 1  # one below its smallest

#: Messages the fast path could not encode before (OverflowError / UnicodeEncodeError).
ODD: list[Message] = [
    Message("assistant", [ToolUseBlock(id="c1", name="calc", input={"n": BIG, "m": SMALL, "f": 3**200})]),
    Message("user", [ToolResultBlock(tool_use_id="c1", content="caf\udce9.txt")]),
    Message("assistant", [TextBlock(text="see caf\udce9 and \ud800 alone")]),
    Message(
        "assistant", [ToolUseBlock(id="c2", name="ls", input={"caf\udce9": ["x\udcff", {"k\udc80": BIG}]})]
    ),
    Message("user", [ToolResultBlock(tool_use_id="c2", content=[TextBlock(text="\udc80\udc81")])]),
    Message("assistant", [ProviderBlock(provider="p", kind="k", data={"id": 2**128, "neg": -(2**128)})]),
    Message("user", [UnknownBlock({"type": "hologram", "n": 10**30, "name\udcfe": "v\udcfe"})]),
    Message("assistant", [TextBlock(text="ordinary"), ToolUseBlock(id="c3", name="x", input={"big": BIG})]),
]

_PLAIN_MP = msgspec.msgpack.Encoder(enc_hook=lambda b: b.data)


@pytest.mark.parametrize("message", ODD, ids=range(len(ODD)))
def test_odd_values_round_trip_msgpack_exactly(message: Message) -> None:
    assert codec.decode_content(codec.encode_content(message.content)) == message.content
    assert codec.decode_message_msgpack(codec.encode_message_msgpack(message)) == message
    assert codec.decode_messages_msgpack(codec.encode_messages_msgpack([message, message])) == [message] * 2


@pytest.mark.parametrize("message", ODD, ids=range(len(ODD)))
def test_odd_values_round_trip_json_exactly(message: Message) -> None:
    raw = codec.encode_message_json(message)
    assert codec.decode_message_json(raw) == message
    assert codec.decode_messages_json(codec.encode_messages_json([message])) == [message]
    assert codec.decode_content_json(codec.encode_json(message.content)) == message.content
    # the text is what Python's json module reads too: standard escapes and plain numbers
    import json

    assert Message.from_dict(json.loads(raw)) == message


def test_json_writes_big_integers_as_numbers_and_lone_surrogates_as_escapes() -> None:
    assert b'"n":18446744073709551616' in codec.encode_message_json(ODD[0])
    assert b'"content":"caf\\udce9.txt"' in codec.encode_message_json(ODD[1])
    assert b'{"caf\\udce9":["x\\udcff",{"k\\udc80":18446744073709551616}]}' in codec.encode_message_json(
        ODD[3]
    )


def test_only_blocks_that_need_it_are_wrapped_and_values_are_exts() -> None:
    stored = msgspec.msgpack.decode(codec.encode_content(ODD[7].content))
    assert stored[0] == {"type": "text", "text": "ordinary"}  # untouched
    assert stored[1]["type"] == codec.ESCAPED_TYPE
    assert stored[1]["block"]["input"]["big"] == msgspec.msgpack.Ext(codec.EXT_BIGINT, b"\x01" + bytes(8))
    stored = msgspec.msgpack.decode(codec.encode_content(ODD[1].content))
    assert stored[0]["block"]["content"] == msgspec.msgpack.Ext(codec.EXT_STR, b"caf\xed\xb3\xa9.txt")


#: A payload as this version writes it; later versions must keep reading it as this message.
PINNED_ESCAPED = bytes.fromhex(
    "9182a474797065b46178696f2d636f6e746578742f65736361706564a5626c6f636b84a474797065a8746f6f6c5f7573"
    "65a26964a163a46e616d65c705026361edb3a9a5696e70757481a16ec70901010000000000000000"
)


def test_the_stored_form_is_pinned() -> None:
    message = [ToolUseBlock(id="c", name="ca\udce9", input={"n": BIG})]
    assert codec.decode_content(PINNED_ESCAPED) == message
    assert codec.encode_content(message) == PINNED_ESCAPED


@settings(max_examples=200, deadline=None)
@given(st.lists(ordinary_messages, max_size=4))
def test_property_ordinary_messages_are_stored_byte_for_byte_as_before(msgs: list[Message]) -> None:
    """What the fast path writes is what plain msgspec writes, so databases written before this
    change and after hold the same bytes for the same messages."""
    assert codec.encode_messages_msgpack(msgs) == _PLAIN_MP.encode(msgs)
    for m in msgs:
        assert codec.encode_content(m.content) == _PLAIN_MP.encode(m.content)


def test_a_typed_decoder_without_the_codec_never_takes_an_escaped_block_for_a_known_one() -> None:
    """Sealed chunks decode with a plain typed decoder and fall back to the codec on a
    ValidationError: an escaped block must raise one, never pass with ext objects inside."""
    plain = msgspec.msgpack.Decoder(list[ContentBlock])
    for message in ODD:
        with pytest.raises(msgspec.ValidationError, match="Invalid value 'axio-context/escaped'"):
            plain.decode(codec.encode_content(message.content))


def test_a_version_before_escaping_keeps_the_block_unknown_and_writes_it_back_unchanged() -> None:
    raw = codec.encode_content(ODD[0].content)
    # a pre-escape reader: unknown type -> the mapping, as it came (exts as msgspec Ext objects)
    kept = msgspec.msgpack.decode(raw)
    assert _PLAIN_MP.encode(kept) == raw
    assert codec.decode_content(_PLAIN_MP.encode(kept)) == ODD[0].content


def test_an_unknown_block_of_the_reserved_type_reads_back_as_it_came() -> None:
    odd = UnknownBlock({"type": codec.ESCAPED_TYPE, "block": {"type": "text", "text": "not mine"}})
    assert codec.decode_content(codec.encode_content([odd])) == [odd]
    assert codec.decode_message_msgpack(codec.encode_message_msgpack(Message("user", [odd]))).content == [odd]
    # in JSON it is just an unknown block
    assert codec.decode_content_json(codec.encode_json([odd])) == [odd]


def test_datetimes_inside_an_escaped_block_are_kept() -> None:
    import datetime

    when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    content = [ToolUseBlock(id="c", name="t", input={"when": when, "n": BIG})]
    assert codec.decode_content(codec.encode_content(content)) == content


def test_an_unsupported_object_next_to_a_big_integer_is_a_type_error() -> None:
    """As from the fast path: the store turns it into a DecodeError and writes nothing."""
    content = [ToolUseBlock(id="c", name="t", input={"n": BIG, "ext": msgspec.msgpack.Ext(9, b"z")})]
    with pytest.raises(TypeError, match="Ext"):
        codec.encode_content(content)


def test_a_stored_wrapper_that_is_damaged_is_a_decode_error_naming_the_block() -> None:
    raw = msgspec.msgpack.encode([{"type": "text", "text": "ok"}, {"type": codec.ESCAPED_TYPE, "block": 5}])
    with pytest.raises(DecodeError, match=r"\$\[1\]\.block"):
        codec.decode_content(raw)
    raw = msgspec.msgpack.encode([{"type": codec.ESCAPED_TYPE, "block": {"type": "text", "text": 1}}])
    with pytest.raises(DecodeError, match=r"Expected `str`, got `int` - at `\$\[0\]\.block\.text`"):
        codec.decode_content(raw)


def test_a_surrogate_pair_of_two_code_points_is_stored_but_json_refuses_it() -> None:
    """JSON spells U+D83D U+DE00 and the emoji they pair to the same way: writing it would
    change the text, so the JSON encoder names it instead; MessagePack keeps it exactly."""
    message = Message("user", [ToolResultBlock(tool_use_id="c", content="x\ud83d\ude00")])
    assert codec.decode_message_msgpack(codec.encode_message_msgpack(message)) == message
    with pytest.raises(
        DecodeError, match=r"U\+D83D directly followed by U\+DE00.*U\+1F600 - at `\$\.content\[0\]\.content`"
    ):
        codec.encode_message_json(message)


def test_json_reader_keeps_escaped_pairs_and_literal_backslashes_apart_from_lone_surrogates() -> None:
    raw = b'[{"type":"text","text":"\\\\udce9 \\ud83d\\ude00 \\udce9 \\uE000 \\u0000"}]'
    assert codec.decode_content_json(raw) == [TextBlock(text="\\udce9 \U0001f600 \udce9 \ue000 \x00")]


def test_malformed_json_with_a_lone_surrogate_is_still_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="malformed JSON"):
        codec.decode_message_json(b'{"role":"user","content":[{"type":"text","text":"\\udce9"}')


def test_decode_json_into_any_type_reads_lone_surrogates() -> None:
    assert codec.decode_json(b'{"a\\udce9":["\\udc80",18446744073709551616]}', dict[str, Any]) == {
        "a\udce9": ["\udc80", BIG]
    }
    with pytest.raises(DecodeError, match=r"Expected `int`, got `str` - at `\$\[0\]`"):
        codec.decode_json(b'["x", "\\udc80"]', list[int])
    # one JSON reader now (decode_json_exact): the element is named, as for any other string
    with pytest.raises(DecodeError, match=r"Expected `int`, got `str` - at `\$\[0\]`"):
        codec.decode_json(b'["\\udc80"]', list[int])


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        # one JSON reader now (decode_json_exact): the exact field is named
        (b'{"role":"\\udc80","content":[]}', "`$.role`"),
        (
            b'{"role":"user","content":[{"type":"image","media_type":"x","data":"\\udc80"}]}',
            "`$.content[0].data`",
        ),
        (
            b'{"role":"user","content":[{"type":"text","text":"\\udc80","signature":1}]}',
            "`$.content[0].signature`",
        ),
    ],
)
def test_bad_json_with_lone_surrogates_is_a_decode_error_naming_the_place(raw: bytes, where: str) -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode_message_json(raw)
    assert where in str(info.value)


def test_a_json_str_with_a_raw_lone_surrogate_decodes() -> None:
    text = '{"role":"user","content":[{"type":"text","text":"caf\udce9"}]}'
    assert codec.decode_message_json(text) == Message("user", [TextBlock(text="caf\udce9")])


# --- property tests ------------------------------------------------------------------------------

_any_text = st.text(st.characters(exclude_categories=()), max_size=12)
_json_text = _any_text.filter(lambda t: re.search("[\ud800-\udbff][\udc00-\udfff]", t) is None)


def _values(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    scalars = (
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text
    )
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
        max_leaves=12,
    )


def _odd_messages(text: st.SearchStrategy[str]) -> st.SearchStrategy[Message]:
    objects = st.dictionaries(text, _values(text), max_size=4)
    blocks = st.one_of(
        st.builds(TextBlock, text=text),
        st.builds(ToolUseBlock, id=text, name=text, input=objects),
        st.builds(
            ToolResultBlock,
            tool_use_id=text,
            content=text | st.lists(st.builds(TextBlock, text=text), max_size=2),
        ),
        st.builds(ProviderBlock, provider=text, kind=text, data=objects),
        st.builds(lambda kind, rest: UnknownBlock({**rest, "type": kind}), unknown_types, objects),
    )
    return st.builds(
        Message, role=st.sampled_from(["user", "assistant"]), content=st.lists(blocks, max_size=4)
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(_odd_messages(_any_text), max_size=3))
def test_property_any_integer_and_any_string_round_trip_msgpack(msgs: list[Message]) -> None:
    assert codec.decode_messages_msgpack(codec.encode_messages_msgpack(msgs)) == msgs
    for m in msgs:
        assert codec.decode_content(codec.encode_content(m.content)) == m.content


@settings(max_examples=300, deadline=None)
@given(st.lists(_odd_messages(_json_text), max_size=3))
def test_property_any_integer_and_any_string_round_trip_json(msgs: list[Message]) -> None:
    assert codec.decode_messages_json(codec.encode_messages_json(msgs)) == msgs


# --- the real store on a file --------------------------------------------------------------------


async def _export(db: Database, fmt: str) -> bytes:
    out: list[bytes] = []
    await db.export(out.append, format=fmt)  # type: ignore[arg-type]
    return b"".join(out)


async def test_store_appends_and_loads_them_exactly_on_a_real_file(db_path: Path) -> None:
    """Before: append raised a raw OverflowError / UnicodeEncodeError and the turn was lost."""
    first = Message("user", [TextBlock(text="list my files")])  # the preview: plain text
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append(first)
        for m in ODD:
            await store.append(m)
        await store.append_many(ODD)
        assert await store.get_history() == [first, *ODD, *ODD]
    async with connect(db_path) as conn:  # read back from the file by a new connection
        assert await SQLiteContextStore(conn, "s").get_history() == [first, *ODD, *ODD]


async def test_big_integers_survive_sealing_export_and_import(db_path: Path, tmp_path: Path) -> None:
    big = [m for m in ODD if m in (ODD[0], ODD[5], ODD[7])]
    messages = transcript(200)
    for i in range(0, 200, 9):
        messages[i] = big[i % len(big)]
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append_many(messages)
        assert scalar(db_path, "SELECT COUNT(*) FROM chunks") > 0  # read through sealed chunks
        assert await store.get_history() == messages
        db = Database(conn, db_path)
        exports = {fmt: await _export(db, fmt) for fmt in ("json", "jsonl")}
    assert b'"n":18446744073709551616' in exports["json"]
    for fmt, data in exports.items():
        path = tmp_path / f"export.{fmt}"
        path.write_bytes(data)
        target = tmp_path / f"imported-{fmt}.db"
        async with connect(target) as conn:
            db = Database(conn, target)
            await db.import_file(path)
            assert await SQLiteContextStore(conn, "s").get_history() == messages
            assert await _export(db, fmt) == data  # export, import, export: byte-identical


async def test_lone_surrogates_export_to_files_that_read_back_exactly(db_path: Path) -> None:
    first = Message("user", [TextBlock(text="list my files")])
    sent = [first, ODD[1], ODD[2], ODD[4], ODD[6]]
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(sent)
        db = Database(conn, db_path)
        as_json, as_jsonl = await _export(db, "json"), await _export(db, "jsonl")
    assert b"caf\\udce9.txt" in as_json
    (record,) = read_json(as_json)
    assert [m.message() for m in record.messages] == sent
    assert list(iter_jsonl(as_jsonl.splitlines())) == [record]


async def test_lone_surrogates_import_into_a_database(db_path: Path, tmp_path: Path) -> None:
    first = Message("user", [TextBlock(text="list my files")])
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many([first, ODD[1], ODD[3]])
        data = await _export(Database(conn, db_path), "jsonl")
    (tmp_path / "e.jsonl").write_bytes(data)
    target = tmp_path / "imported.db"
    async with connect(target) as conn:
        await Database(conn, target).import_file(tmp_path / "e.jsonl")
        assert await SQLiteContextStore(conn, "s").get_history() == [first, ODD[1], ODD[3]]
    check_storage(target)


async def test_lone_surrogates_in_the_preview_and_the_keyword_index(db_path: Path) -> None:
    """The text derived from a message (its preview, its keyword-index entry) takes U+FFFD for a
    lone surrogate, since SQLite refuses them; the message itself reads back exactly. A fold
    with such a message, a search, and the FTS 'delete' of a pop all work."""
    odd_first = Message("user", [TextBlock(text="open caf\udce9 notes")])
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append(odd_first)
        for m in ODD:
            await store.append(m)
        db = Database(conn, db_path)
        hits = await db.search("notes", mode="keyword")
        assert [(h.session_id, h.position) for h in hits] == [("s", 0)]
        assert [h.position for h in await db.search("alone", mode="keyword")] == [3]
        assert (await store.info()).preview == "open caf\ufffd notes"
        assert await store.get_history() == [odd_first, *ODD]
        for _ in ODD:
            await store.pop()  # each an FTS 'delete' fed the text as it was indexed
        assert await db.search("alone", mode="keyword") == []
        assert await store.get_history() == [odd_first]
    check_storage(db_path)


async def test_what_still_cannot_be_stored_is_a_decode_error_and_nothing_is_written(db_path: Path) -> None:
    bad = Message("assistant", [ToolUseBlock(id="c", name="x", input={"n": BIG, "obj": object()})])
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append(Message("user", [TextBlock(text="hi")]))
        with pytest.raises(DecodeError, match="cannot be encoded"):
            await store.append(bad)
        assert await store.get_history() == [Message("user", [TextBlock(text="hi")])]


# --- transcripts ---------------------------------------------------------------------------------

T0 = "2024-01-01T00:00:00.000+00:00"


def _fields(header: SessionHeader) -> dict[str, Any]:
    return {f: getattr(header, f) for f in SessionHeader.__struct_fields__}


def _records(messages: list[Message]) -> list[MessageRecord]:
    return [MessageRecord(role=m.role, content=m.content, created_at=T0) for m in messages]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_transcripts_carry_them_in_messages_and_checkpoint_summaries(fmt: str) -> None:
    summary = [Message("user", [TextBlock(text="summary of caf\udce9")])]
    header = SessionHeader(
        id="s",
        created_at=T0,
        updated_at=T0,
        message_count=len(ODD),
        checkpoints=[CheckpointRecord(id=1, position=2, summary=summary, created_at=T0)],
    )
    w = writer_for(fmt)
    data = (
        w.begin() + w.session(header) + w.messages(header, 0, _records(ODD)) + w.end_session(header) + w.end()
    )
    records = read_json(data) if fmt == "json" else list(iter_jsonl(data.splitlines()))
    assert records == [SessionRecord(**_fields(header), messages=_records(ODD))]


def test_markdown_shows_them_without_failing() -> None:
    header = SessionHeader(id="s", created_at=T0, updated_at=T0, message_count=len(ODD))
    w = MarkdownWriter()
    out = (w.session(header) + w.messages(header, 0, _records(ODD))).decode()
    assert '"n": 18446744073709551616' in out
    assert "caf\\udce9.txt" in out  # the undecodable byte, shown as its escape
    assert '"caf\\udce9": [' in out


@pytest.mark.parametrize(
    ("line", "where"),
    [
        (b'"title":"caf\\udce9"', "$.title"),
        (b'"project":"/home/\\udce9"', "$.project"),
        (b'"parent_id":"p\\udce9"', "$.parent_id"),
        (
            b'"checkpoints":[{"id":1,"position":0,"summarizer":"s\\udce9","created_at":"'
            + T0.encode()
            + b'"}]',
            "$.checkpoints[0].summarizer",
        ),
    ],
)
def test_a_lone_surrogate_in_a_sessions_own_fields_is_named(line: bytes, where: str) -> None:
    """The database's plain text columns cannot hold one: refused by name, not a crash on
    import. (Metadata can: it is stored as escaped JSON; see test_codec_nonfinite.)"""
    data = (
        b'{"kind":"session","format":"axio-context","version":1,"id":"s","created_at":"'
        + T0.encode()
        + b'","updated_at":"'
        + T0.encode()
        + b'","message_count":0,'
        + line
        + b"}\n"
    )
    with pytest.raises(TranscriptError, match=re.escape(f"line 1: {where}: holds a lone surrogate")):
        list(iter_jsonl(data.splitlines()))


def test_the_command_lines_json_output_keeps_lone_surrogates(db_path: Path) -> None:
    """``show --json`` writes a lone surrogate as its ``\\uXXXX`` escape (msgspec's formatter
    alone refuses it), which Python's json reads back to the same string."""
    import asyncio
    import json

    from tests.support.cli_helpers import invoke

    odd = Message("user", [ToolResultBlock(tool_use_id="c", content="caf\udce9.txt")])

    async def fill() -> None:
        async with connect(db_path) as conn:
            await SQLiteContextStore(conn, "s", project="p").append_many(
                [Message("user", [TextBlock(text="hi")]), odd]
            )

    asyncio.run(fill())
    out = invoke("--db", db_path, "show", "s", "--json").stdout
    assert "\\udce9" in out
    shown = json.loads(out)["messages"][1]["content"][0]["content"]
    assert shown == "caf\udce9.txt"
