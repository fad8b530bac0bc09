"""What a store accepts it must give back (issue 18, items 1 and 4; issue 17's int keys in
unknown blocks): content the read path cannot decode is refused on append, by the SQLite store
on a real file and by the memory store alike, with a DecodeError naming the message, the block
and the field; nothing is written and the session stays readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axio_context import MemoryContextStore, Message, TextBlock
from axio_context.blocks import ImageBlock, ProviderBlock, ToolUseBlock, UnknownBlock
from axio_context.codec import MAX_DEPTH, check_message, decode_content, encode_content
from axio_context.context import ContextStore
from axio_context.errors import DecodeError
from axio_context_sqlite import SQLiteContextStore, connect
from tests.support.sqlite_checks import check_storage


def nested(depth: int) -> dict[str, Any]:
    """A mapping ``depth`` containers deep (the mapping itself is level 1)."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


GOOD = Message(role="user", content=[TextBlock(text="before")])

#: (content, what the error must say); each stored once would fail every read of the session.
BAD: list[tuple[list[Any], str]] = [
    (
        [TextBlock(text="ok"), ToolUseBlock(id="t", name="f", input=None)],  # type: ignore[arg-type]
        r"message 1: content\[1\] \(tool_use\): input: expected `object`, got `(?:null|None)`",
    ),
    (
        [ToolUseBlock(id="t", name="f", input=[1, 2])],  # type: ignore[arg-type]
        r"message 1: content\[0\] \(tool_use\): input: expected `object`, got `array`",
    ),
    (
        [ImageBlock(media_type="image/png", data="aGVsbG8=")],  # type: ignore[arg-type]
        r"message 1: content\[0\] \(image\): data: expected `bytes`, got `str`",
    ),
    (
        [UnknownBlock({"type": "text", "signature": "no text field"})],
        r"message 1: content\[0\] \(text\): object missing required field `text`",
    ),
    (
        [UnknownBlock({"type": "tool_use", "id": "t", "name": "f", "input": "str"})],
        r"message 1: content\[0\] \(tool_use\): input: expected `object`, got `str`",
    ),
    (
        [{"type": "image", "media_type": "image/png"}],
        r"message 1: content\[0\] \('image'\): object missing required field `data`",
    ),
    ([5], r"message 1: content\[0\] \(int\): expected `object`, got `int`"),
    (
        [ToolUseBlock(id="t", name="f", input=nested(MAX_DEPTH + 1))],
        r"message 1: content\[0\] \(tool_use 'f'\) input nests more than 100 levels deep",
    ),
    (
        [ToolUseBlock(id="t", name="f", input=nested(1_000))],
        r"message 1: content\[0\] \(tool_use 'f'\) input nests more than 100 levels deep",
    ),
    (
        [ProviderBlock(provider="p", kind="k", data=nested(5_000))],
        r"message 1: content\[0\] \(provider\) data nests more than 100 levels deep",
    ),
    (
        [UnknownBlock({"type": "hologram", "frames": {"n": {1: "x"}}})],
        r"message 1 cannot be encoded: block 0 \('hologram'\) block\['frames'\]\['n'\] has the key 1 \(int\)",
    ),
]


def _with_role(content: list[Any]) -> Message:
    return Message(role="assistant", content=content)


BAD_MESSAGES: list[tuple[Message, str]] = [
    *[(_with_role(content), error) for content, error in BAD],
    (
        Message(role="assistant", content="a string"),  # type: ignore[arg-type]
        r"message 1: content: expected a list of blocks, got str",
    ),
    (Message(role="bogus", content=[]), r"message 1: .*role"),  # type: ignore[arg-type]
]


async def _refused(store: ContextStore, bad: Message, error: str) -> None:
    await store.append(GOOD)
    # memory store messages read "message 1: cannot be encoded" for keys; the SQLite store
    # "message 1 cannot be encoded": the same rule, one spelling per store's history
    with pytest.raises(DecodeError, match=error.replace(" cannot be encoded", ":? cannot be encoded")):
        await store.append_many([GOOD, bad])
    with pytest.raises(DecodeError):
        await store.append(bad)
    assert await store.get_history() == [GOOD]


@pytest.mark.parametrize(("bad", "error"), BAD_MESSAGES)
async def test_the_memory_store_refuses_what_a_store_could_not_give_back(bad: Message, error: str) -> None:
    await _refused(MemoryContextStore(), bad, error)


@pytest.mark.parametrize(("bad", "error"), BAD_MESSAGES)
async def test_the_sqlite_store_refuses_it_writes_nothing_and_stays_readable(
    db_path: Path, bad: Message, error: str
) -> None:
    async with connect(db_path) as conn:
        await _refused(SQLiteContextStore(conn, "s"), bad, error)
    async with connect(db_path) as conn:
        assert await SQLiteContextStore(conn, "s").get_history() == [GOOD]
    assert check_storage(db_path) == {"s": 1}


def test_the_error_is_one_line() -> None:
    for content, _ in BAD:
        with pytest.raises((DecodeError, TypeError)) as info:
            encode_content(content)
        assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_what_the_read_path_reads_is_still_accepted() -> None:
    """Unknown types, an unknown nested type in a tool result, a dict posing as a block that
    fits, and data exactly MAX_DEPTH deep all read back, so they are stored."""
    fits = [
        UnknownBlock({"type": "hologram", "frames": [1, 2]}),
        UnknownBlock({"type": "tool_result", "tool_use_id": "x", "content": [{"type": "hologram"}]}),
        ToolUseBlock(id="t", name="f", input=nested(MAX_DEPTH)),
    ]
    assert decode_content(encode_content(fits)) == fits
    assert decode_content(encode_content([{"type": "text", "text": "hi"}])) == [TextBlock(text="hi")]
    check_message(Message(role="user", content=fits))
