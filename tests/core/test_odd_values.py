"""Review 3 (core): values the codec stores but that broke estimation, rendering and compaction.

A huge integer (past ``str()``'s 4,300-digit limit), a lone surrogate or an odd nested key in a
tool input must never make ``append``, a summarizer, a strategy or a compaction fail; a NaN in
the leading system message must not stop compaction on SQLite after the first one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axio_context import MemoryContextStore, Message
from axio_context.blocks import ProviderBlock, TextBlock, ToolResultBlock, ToolUseBlock, UnknownBlock
from axio_context.compaction import AutoCompactStore, CompactionContext
from axio_context.compaction.strategies import HardTruncation, TokenBudget, message_chars
from axio_context.compaction.summarizers import ExtractiveSummarizer, render_messages
from axio_context.errors import SummarizerError
from axio_context.messages import input_text, provider_text, text_columns
from axio_context.tokens import estimate_message_tokens
from axio_context_sqlite import SQLiteContextStore, connect
from tests.compaction.test_openai import Server, server, summarizer

__all__ = ["server"]  # the fixture, used by name

HUGE = 10**5000  # 5,001 digits: str() and repr() refuse it
SURROGATE_PATH = "caf\udce9.txt"  # a file name decoded with surrogateescape

ODD_INPUTS: dict[str, dict[str, Any]] = {
    "huge int": {"n": HUGE},
    "negative huge int": {"n": [-HUGE, 1]},
    "lone surrogate": {"path": SURROGATE_PATH},
    "None key nested": {"a": {None: 1}},
    "tuple key nested": {"a": {(1, 2): "x"}},
    "surrogate and tuple key": {"p": "x\udc80", "a": {(1, 2): 1}},
}


def call(inp: dict[str, Any], call_id: str = "t1") -> Message:
    return Message("assistant", [ToolUseBlock(id=call_id, name="cat", input=inp)])


def result(call_id: str = "t1") -> Message:
    return Message("user", [ToolResultBlock(tool_use_id=call_id, content="ok")])


def chat(n: int, tag: str = "") -> list[Message]:
    return [
        Message("user" if i % 2 == 0 else "assistant", [TextBlock(f"{tag} turn {i} " * 20)]) for i in range(n)
    ]


def utf8(text: str) -> str:
    text.encode()  # raises on a lone surrogate
    return text


# --- 3: token estimation -----------------------------------------------------------------------


def test_huge_int_is_estimated_from_its_length() -> None:
    for message in (
        call({"n": HUGE}),
        Message("assistant", [ProviderBlock(provider="x", kind="k", data={"n": HUGE})]),
        Message("assistant", [UnknownBlock(data={"type": "future", "n": [HUGE, -HUGE]})]),
    ):
        tokens = estimate_message_tokens(message)
        assert 5_000 // 4 <= tokens <= 2 * 5_000  # about a quarter of the digits, as text would cost
    small = call({"n": 2**70})
    assert estimate_message_tokens(small) == 4 + 8 + (len("cat") + len(repr({"n": 2**70})) + 3) // 4


async def test_huge_int_appends_to_both_stores(tmp_path: Path) -> None:
    messages = [Message("user", [TextBlock("go")]), call({"n": HUGE}), result()]
    memory = MemoryContextStore()
    await memory.append_many(messages)
    async with connect(tmp_path / "huge.db") as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        for message in messages:
            await store.append(message)
        assert await store.estimated_view_tokens() == await memory.estimated_view_tokens()
        [_, stored, _] = await store.get_history()
        assert isinstance(stored.content[0], ToolUseBlock) and stored.content[0].input == {"n": HUGE}


def test_search_text_of_a_huge_int_never_raises() -> None:
    # The keyword indexer relies on text_columns never raising.
    assert text_columns(call({"n": HUGE})) == ("", "cat")
    assert text_columns(call({"n": 2**70})) == ("", 'cat\n{"n":1180591620717411303424}')


# --- 4: rendering and compaction ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(ODD_INPUTS))
def test_input_text_renders_every_odd_input_as_utf8(name: str) -> None:
    text = utf8(input_text(ODD_INPUTS[name]))
    assert text.startswith("{") and text.endswith("}")


def test_input_text_spellings() -> None:
    assert input_text({"path": SURROGATE_PATH}) == '{"path":"caf\ufffd.txt"}'
    assert input_text({"n": HUGE}) == '{"n":"<integer of about 5001 digits>"}'
    assert input_text({"n": [-HUGE, 1]}) == '{"n":["<integer of about 5002 digits>",1]}'
    assert input_text({"a": {None: 1}}) == '{"a":{"null":1}}'
    assert input_text({"a": 1, "b": [2.5, None]}) == '{"a":1,"b":[2.5,null]}'  # msgspec's own text


@pytest.mark.parametrize("name", list(ODD_INPUTS))
async def test_summarizers_and_strategies_take_odd_inputs(name: str) -> None:
    view = [Message("user", [TextBlock("list files")]), call(ODD_INPUTS[name]), result(), *chat(6)]
    [_, rendered, _, *_] = render_messages(view)
    assert utf8(rendered).startswith("Assistant called tool cat({")
    summary = await ExtractiveSummarizer()(view, "")
    assert "cat(" in summary
    assert message_chars(view[1]) > len("cat")
    truncated = await HardTruncation(max_chars=400)(view, CompactionContext())
    assert truncated and truncated[-1] == view[-1]
    budget = TokenBudget(50, [HardTruncation(max_messages=3)])
    assert len(await budget(view, CompactionContext())) <= 3


async def test_a_lone_surrogate_in_a_tool_input_does_not_stop_compaction(tmp_path: Path) -> None:
    async with connect(tmp_path / "poison.db") as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append_many(
            [Message("user", [TextBlock("list files")]), call({"path": SURROGATE_PATH}), result(), *chat(20)]
        )
        auto = AutoCompactStore(store, None, keep_recent=4, max_tokens=100)
        assert await auto.compact() is True
        view = await auto.get_history()
        assert len(view) == 2 + 4
        assert "cat(" in view[0].text
        assert len(await store.get_full_history()) == 23  # nothing lost


async def test_openai_summarizer_sends_lone_surrogates_as_replacement_characters(server: Server) -> None:
    s = summarizer(server, "ok")
    text = await s(
        [Message("user", [TextBlock("name: caf\udce9")]), call({"path": SURROGATE_PATH}), result()],
        "prompt \udc80",
    )
    assert text.startswith("summary 1:")
    [request] = server.requests
    system, user = request["messages"]
    assert system["content"] == "prompt \ufffd"
    assert "User: name: caf\ufffd" in user["content"]
    assert 'cat({"path":"caf\ufffd.txt"})' in user["content"]


async def test_openai_request_that_cannot_be_written_is_a_summarizer_error(server: Server) -> None:
    s = summarizer(server, "ok")
    s.model = "model-\udc80"
    with pytest.raises(SummarizerError, match="cannot write the request"):
        await s([Message("user", [TextBlock("hello")])], "prompt")
    assert server.requests == []


# --- 5: a NaN in the system prompt on SQLite ---------------------------------------------------


async def test_nan_in_the_system_message_does_not_stop_compaction_on_sqlite(tmp_path: Path) -> None:
    system = Message(
        "system",
        [TextBlock("be brief"), ProviderBlock(provider="x", kind="cfg", data={"temp": float("nan")})],
    )
    async with connect(tmp_path / "nan.db") as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(system)
        auto = AutoCompactStore(store, None, keep_recent=2, max_tokens=10)
        for round_ in range(3):
            await auto.append_many(chat(10, f"r{round_}"))
            assert await auto.compact() is True, f"compaction {round_ + 1} was skipped"
            view = await auto.get_history()
            assert len(view) == 1 + 2 + 2  # system, summary pair, the two kept
        assert len(await store.list_checkpoints()) == 3


def test_provider_block_is_estimated_by_its_text_not_its_json() -> None:
    image = "data:image/png;base64," + "iVBORw0KGgo" * 20_000  # 220 KB of base64
    item = {
        "type": "message",
        "id": "msg_" + "a" * 40,
        "role": "user",
        "content": [
            {"type": "input_text", "text": "word " * 80},
            {"type": "input_image", "image_url": image, "detail": "auto"},
        ],
    }
    message = Message("user", [ProviderBlock(provider="openai", kind="message", data=item)])
    assert estimate_message_tokens(message) == 4 + 4 + 400 // 4 + 1_600
    reasoning = {"type": "reasoning", "encrypted_content": "gAAAA" + "Z" * 50_000, "summary": []}
    assert (
        estimate_message_tokens(Message("assistant", [ProviderBlock("openai", "reasoning", reasoning)])) == 8
    )
    assert provider_text(item) == "word " * 80
    call = {"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": "{not json"}
    assert text_columns(Message("assistant", [ProviderBlock("openai", "function_call", call)])) == (
        "",
        "get_weather\n{not json",
    )
