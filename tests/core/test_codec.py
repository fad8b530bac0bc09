"""The codec: exact round trips, unknown blocks kept, bad data named precisely."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context import (
    DecodeError,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    codec,
)
from axio_context.testing import every_block_message
from tests.support.strategies import json_objects, messages, unknown_types


@pytest.mark.parametrize(
    ("encode", "decode"),
    [
        (codec.encode_messages_json, codec.decode_messages_json),
        (codec.encode_messages_msgpack, codec.decode_messages_msgpack),
    ],
)
def test_every_block_round_trips_exactly(encode, decode) -> None:  # type: ignore[no-untyped-def]
    sent = every_block_message()
    assert decode(encode(sent)) == sent


def test_single_message_and_content_round_trip() -> None:
    for msg in every_block_message():
        assert codec.decode_message_json(codec.encode_message_json(msg)) == msg
        assert codec.decode_message_msgpack(codec.encode_message_msgpack(msg)) == msg
        assert codec.decode_content(codec.encode_content(msg.content)) == msg.content
        assert codec.decode_content_json(codec.encode_json(msg.content)) == msg.content


def test_json_shape_is_axios() -> None:
    msg = Message(
        role="assistant",
        content=[
            TextBlock(text="hi"),
            ImageBlock(media_type="image/png", data=b"\x00\x01"),
            ToolUseBlock(id="c1", name="ls", input={"p": "."}),
            ToolResultBlock(tool_use_id="c1", content="out"),
        ],
    )
    assert msgspec.json.decode(codec.encode_message_json(msg)) == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "media_type": "image/png", "data": "AAE="},
            {"type": "tool_use", "id": "c1", "name": "ls", "input": {"p": "."}},
            {"type": "tool_result", "tool_use_id": "c1", "content": "out", "is_error": False},
        ],
    }


def test_msgpack_keeps_bytes_binary() -> None:
    data = bytes(range(256))
    raw = codec.encode_message_msgpack(
        Message(role="user", content=[ImageBlock(media_type="image/png", data=data)])
    )
    assert data in raw  # not base64


def test_unknown_block_survives_both_formats() -> None:
    odd = {"type": "hologram", "frames": [1, 2], "nested": {"a": None}}
    msg = Message(
        role="assistant", content=[TextBlock(text="before"), UnknownBlock(odd), TextBlock(text="after")]
    )
    for enc, dec in [
        (codec.encode_message_json, codec.decode_message_json),
        (codec.encode_message_msgpack, codec.decode_message_msgpack),
    ]:
        raw = enc(msg)
        back = dec(raw)
        assert back == msg
        assert isinstance(back.content[1], UnknownBlock)
        assert back.content[1].data == odd
        assert enc(back) == raw


def test_unknown_block_from_newer_writer_json_text() -> None:
    raw = b'{"role":"user","content":[{"type":"document","source":{"k":[1,2.5]},"title":"t"}]}'
    msg = codec.decode_message_json(raw)
    assert msg.content == [UnknownBlock({"type": "document", "source": {"k": [1, 2.5]}, "title": "t"})]
    assert codec.encode_message_json(msg) == raw


def test_tool_result_with_unknown_nested_block_is_kept_whole() -> None:
    raw = (
        b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"c",'
        b'"content":[{"type":"document","x":1}],"is_error":false}]}'
    )
    msg = codec.decode_message_json(raw)
    assert isinstance(msg.content[0], UnknownBlock)
    assert msg.content[0].type == "tool_result"
    assert codec.encode_message_json(msg) == raw


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            b'{"role":"user","content":[{"type":"text","text":5}]}',
            "Expected `str`, got `int` - at `$.content[0].text`",
        ),
        (b'{"role":"user","content":[{"type":"text"}]}', "missing required field `text` - at `$.content[0]`"),
        (b'{"role":"robot","content":[]}', "`$.role`"),
        (
            b'{"role":"user","content":[{"type":"zzz"},{"type":"image","media_type":"image/png"}]}',
            "missing required field `data` - at `$.content[1]`",
        ),
        (b'{"role":"user","content":[{"text":"no type"}]}', "`type` - at `$.content[0]`"),
        (
            b'{"role":"user","content":[{"type":"tool_use","id":"1","name":"x","input":[]}]}',
            "`$.content[0].input`",
        ),
        (b'{"role":"user","content":[{"type":"reasoning","signature":7}]}', "`$.content[0].signature`"),
    ],
)
def test_bad_json_names_the_field(raw: bytes, expected: str) -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode_message_json(raw)
    assert expected in str(info.value)


def test_bad_list_names_the_message_index() -> None:
    raw = (
        b'[{"role":"user","content":[]},{"role":"user","content":[{"type":"zzz"},{"type":"text","text":1}]}]'
    )
    with pytest.raises(DecodeError, match=r"\$\[1\]\.content\[1\]\.text"):
        codec.decode_messages_json(raw)


def test_malformed_bytes_are_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="malformed JSON"):
        codec.decode_message_json(b'{"role": "user", "content": [')
    with pytest.raises(DecodeError, match="malformed MessagePack"):
        codec.decode_message_msgpack(b"\xc1")


def test_bad_msgpack_names_the_field() -> None:
    raw = msgspec.msgpack.encode(
        {"role": "user", "content": [{"type": "image", "media_type": 3, "data": b""}]}
    )
    with pytest.raises(DecodeError, match=r"\$\.content\[0\]\.media_type"):
        codec.decode_message_msgpack(raw)


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=6))
def test_property_any_messages_round_trip_json(msgs: list[Message]) -> None:
    assert codec.decode_messages_json(codec.encode_messages_json(msgs)) == msgs


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=6))
def test_property_any_messages_round_trip_msgpack(msgs: list[Message]) -> None:
    assert codec.decode_messages_msgpack(codec.encode_messages_msgpack(msgs)) == msgs


@settings(max_examples=200, deadline=None)
@given(unknown_types, json_objects)
def test_property_unknown_mapping_survives_unchanged(kind: str, rest: dict) -> None:  # type: ignore[type-arg]
    mapping = {**rest, "type": kind}
    raw_json = msgspec.json.encode({"role": "user", "content": [mapping]})
    back = codec.decode_message_json(raw_json)
    assert back.content == [UnknownBlock(mapping)]
    assert codec.encode_message_json(back) == raw_json
    raw_mp = msgspec.msgpack.encode({"role": "user", "content": [mapping]})
    back_mp = codec.decode_message_msgpack(raw_mp)
    assert back_mp.content == [UnknownBlock(mapping)]
    assert codec.encode_message_msgpack(back_mp) == raw_mp
