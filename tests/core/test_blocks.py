"""Blocks and messages: axio's dict shape, validation, immutability."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from axio_context import (
    DecodeError,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    from_dict,
    to_dict,
)
from axio_context.messages import preview_of, searchable_text
from axio_context.testing import every_block_message, sample_blocks
from tests.support.strategies import blocks, messages


def test_to_dict_matches_axio_shapes() -> None:
    assert to_dict(TextBlock(text="a")) == {"type": "text", "text": "a"}
    assert to_dict(TextBlock(text="a", signature="s", provider="p")) == {
        "type": "text",
        "text": "a",
        "signature": "s",
        "provider": "p",
    }
    assert to_dict(ImageBlock(media_type="image/png", data=b"\xff")) == {
        "type": "image",
        "media_type": "image/png",
        "data": "/w==",
    }
    assert to_dict(ToolUseBlock(id="1", name="n", input={"a": 1})) == {
        "type": "tool_use",
        "id": "1",
        "name": "n",
        "input": {"a": 1},
    }
    assert to_dict(ToolResultBlock(tool_use_id="1", content=[TextBlock(text="r")])) == {
        "type": "tool_result",
        "tool_use_id": "1",
        "content": [{"type": "text", "text": "r"}],
        "is_error": False,
    }
    assert to_dict(ReasoningBlock(text="t")) == {
        "type": "reasoning",
        "text": "t",
        "redacted": False,
        "id": "",
    }
    assert to_dict(ReasoningBlock(signature="x", redacted=True)) == {
        "type": "reasoning",
        "text": "",
        "redacted": True,
        "id": "",
        "signature": "x",
    }


def test_from_dict_reads_what_axio_writes() -> None:
    # exactly what axio 0.12's blocks.to_dict produces
    axio_dicts = [
        {"type": "text", "text": "hello"},
        {"type": "image", "media_type": "image/png", "data": "AAEC"},
        {"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": "x"}},
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [{"type": "text", "text": "hit"}],
            "is_error": True,
        },
        {"type": "reasoning", "text": "hm", "redacted": False, "id": "", "signature": "S"},
        {"type": "provider", "provider": "openai", "kind": "k", "data": {"a": 1}, "id": ""},
    ]
    got = [from_dict(d) for d in axio_dicts]
    assert got[1] == ImageBlock(media_type="image/png", data=b"\x00\x01\x02")
    assert got[3] == ToolResultBlock(tool_use_id="t1", content=[TextBlock(text="hit")], is_error=True)
    assert got[4] == ReasoningBlock(text="hm", signature="S")
    assert [to_dict(b) for b in got] == axio_dicts


def test_from_dict_unknown_type_kept() -> None:
    d = {"type": "future", "payload": [1, {"x": None}]}
    block = from_dict(d)
    assert isinstance(block, UnknownBlock)
    assert block.type == "future"
    assert to_dict(block) == d


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"type": "text"}, "missing required field `text`"),
        ({"type": "text", "text": 1}, "Expected `str`, got `int` - at `$.text`"),
        ({"type": "image", "media_type": "image/png", "data": "!!not base64!!"}, "$.data"),
        ({"type": "tool_use", "id": "1", "name": "n", "input": "nope"}, "$.input"),
        ({"text": "no type"}, "string `type`"),
        ("not a mapping", "must be a mapping"),
    ],
)
def test_from_dict_errors_name_the_field(data: object, needle: str) -> None:
    with pytest.raises(DecodeError) as info:
        from_dict(data)  # type: ignore[arg-type]
    assert needle in str(info.value)


def test_message_from_dict_errors() -> None:
    with pytest.raises(DecodeError, match="role"):
        Message.from_dict({"role": "bot", "content": []})
    with pytest.raises(DecodeError, match=r"content\[1\].*text"):
        Message.from_dict({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text"}]})


def test_message_dict_round_trip_every_block() -> None:
    for msg in every_block_message():
        assert Message.from_dict(msg.to_dict()) == msg


@settings(max_examples=150, deadline=None)
@given(blocks)
def test_property_block_dict_round_trip(block: object) -> None:
    assert from_dict(to_dict(block)) == block  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(messages)
def test_property_message_dict_round_trip(msg: Message) -> None:
    assert Message.from_dict(msg.to_dict()) == msg


def test_blocks_are_frozen() -> None:
    for block in sample_blocks():
        with pytest.raises(AttributeError):
            block.text = "changed"  # type: ignore[union-attr,misc]


def test_signatures_stay_out_of_repr() -> None:
    assert "secret" not in repr(ReasoningBlock(text="t", signature="secret"))
    assert "secret" not in repr(TextBlock(text="t", signature="secret"))
    assert "bytes" in repr(ImageBlock(media_type="image/png", data=b"123"))


def test_preview_and_searchable_text() -> None:
    history = every_block_message()
    assert preview_of(history) == "plain ascii"
    assert preview_of([Message(role="assistant", content=[TextBlock(text="a")])]) == "(empty)"
    text = searchable_text(history[2])
    assert "read_file" in text and "/tmp/ä.txt" in text
    assert "file body" in searchable_text(history[3])
    assert "nested" in searchable_text(history[3])
    assert Message(role="user", content=[TextBlock(text="a"), TextBlock(text="b")]).text == "a\nb"
