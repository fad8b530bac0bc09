"""Mapping keys in tool inputs and provider data must be strings, as in JSON: a message with
another key is refused before it is stored. Stored, a top-level int key failed the typed decoder
on every read of the session, and a None key failed every JSON export of the database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axio_context import Message, TextBlock
from axio_context.blocks import ProviderBlock, ToolUseBlock
from axio_context.codec import decode_content, encode_content
from axio_context.errors import DecodeError
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from tests.support.sqlite_checks import check_storage, text_message, texts

BAD_INPUTS: list[tuple[dict[Any, Any], str]] = [
    ({2: "y"}, r"input has the key 2 \(int\)"),
    ({"args": {1: "x"}}, r"input\['args'\] has the key 1 \(int\)"),
    ({"a": [{"b": {None: 1}}]}, r"input\['a'\]\[0\]\['b'\] has the key None \(NoneType\)"),
    ({"t": {(1, 2): 3}}, r"has the key \(1, 2\) \(tuple\)"),
    ({"a": ({"ok": [1]}, {4: "z"})}, r"input\['a'\]\[1\] has the key 4 \(int\)"),
]


@pytest.mark.parametrize(("data", "error"), BAD_INPUTS)
def test_a_tool_input_key_that_is_not_a_string_is_refused(data: dict[Any, Any], error: str) -> None:
    with pytest.raises(TypeError, match=error):
        encode_content([TextBlock(text="x"), ToolUseBlock(id="t", name="f", input=data)])


def test_provider_data_keys_are_checked_too() -> None:
    with pytest.raises(TypeError, match=r"block 0 \(provider\) data has the key 3"):
        encode_content([ProviderBlock(provider="x", kind="k", data={3: 1})])


def test_string_keys_at_any_depth_encode_as_before() -> None:
    block = ToolUseBlock(id="t", name="f", input={"a": [{"b": {"c": 1}}], "": None})
    assert decode_content(encode_content([block])) == [block]


async def test_the_store_refuses_it_and_the_session_stays_readable(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append(text_message("before"))
        bad = Message(role="assistant", content=[ToolUseBlock(id="t", name="f", input={2: "y"})])
        with pytest.raises(DecodeError, match="has the key 2"):
            await store.append(bad)
        with pytest.raises(DecodeError, match="has the key None"):
            await store.append_many(
                [
                    text_message("a"),
                    Message(role="assistant", content=[ToolUseBlock("t", "f", {"x": {None: 1}})]),
                ]
            )
        assert texts(await store.get_history()) == ["before"]
        assert texts(await store.get_full_history()) == ["before"]
    async with open_database(db_path) as db:
        exported: list[bytes] = []
        await db.export(exported.append, format="jsonl")
        assert b"before" in b"".join(exported)
    check_storage(db_path)
