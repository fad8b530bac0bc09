"""The ContextStore contract as a reusable pytest suite (needs pytest and pytest-asyncio).

Subclass :class:`ContextStoreContract` in a test module and provide a ``factory`` fixture that
returns a :class:`StoreFactory`; every test below then runs against that store, unchanged.
Every backend (memory, SQLite, a third party's) is done when it passes this suite::

    class TestMyStore(ContextStoreContract):
        @pytest.fixture
        async def factory(self, tmp_path):
            return MyFactory(tmp_path)
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import pytest

from .blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from .context import ContextStore
from .messages import Message

__all__ = ["ContextStoreContract", "StoreFactory", "every_block_message", "sample_blocks", "text"]


class StoreFactory(Protocol):
    """How the contract suite makes stores of one backend."""

    async def new(self) -> ContextStore:
        """A store for a brand-new, empty session."""
        ...

    async def from_history(self, history: list[Message]) -> ContextStore:
        """A new store holding ``history`` (the backend's ``from_history``)."""
        ...

    async def from_context(self, context: ContextStore) -> ContextStore:
        """A new store holding a copy of ``context`` (the backend's ``from_context``)."""
        ...


def text(role: str, body: str) -> Message:
    """A one-text-block message; shorthand for tests."""
    return Message(role=role, content=[TextBlock(text=body)])  # type: ignore[arg-type]


def sample_blocks() -> list[ContentBlock]:
    """One of every block type, with the awkward values: bytes, unicode, empties, nesting."""
    png = bytes(range(256)) * 4
    return [
        TextBlock(text="plain ascii"),
        TextBlock(text=""),
        TextBlock(text="ünïcödé ✓ 日本語 🎉 \x00 nul and \n newline"),
        TextBlock(text="signed", signature="sig+/=", provider="anthropic"),
        ImageBlock(media_type="image/png", data=png),
        ImageBlock(media_type="image/jpeg", data=b""),
        AudioBlock(media_type="audio/wav", data=b"RIFF\x00\x01"),
        VideoBlock(media_type="video/mp4", data=b"\x00\x00\x00\x18ftyp"),
        ToolUseBlock(id="call_1", name="read_file", input={"path": "/tmp/ä.txt", "n": [1, 2.5, None, True]}),
        ToolUseBlock(id="call_2", name="noop", input={}),
        ToolResultBlock(tool_use_id="call_1", content="file body\n" * 3),
        ToolResultBlock(tool_use_id="call_2", content="", is_error=True),
        ToolResultBlock(
            tool_use_id="call_3",
            content=[TextBlock(text="nested"), ImageBlock(media_type="image/gif", data=b"GIF89a")],
        ),
        ToolResultBlock(tool_use_id="call_4", content=[]),
        ReasoningBlock(text="thinking…", signature="EqQBCkYIARgCKkDsig==", redacted=False, id="rs_1"),
        ReasoningBlock(text="", signature="opaque", redacted=True, provider="anthropic"),
        ProviderBlock(provider="openai", kind="web_search_call", data={"id": "ws_1", "q": "x"}, id="ws_1"),
        UnknownBlock({"type": "hologram", "frames": [1, 2, 3], "meta": {"fps": 24.0, "ok": True}}),
    ]


def every_block_message() -> list[Message]:
    """A short conversation that uses every block type in every role it may appear in."""
    blocks = sample_blocks()
    return [
        Message(role="system", content=[TextBlock(text="You are terse.")]),
        Message(role="user", content=blocks[:8]),
        Message(role="assistant", content=[blocks[14], blocks[8], blocks[9], blocks[16]]),
        Message(role="user", content=blocks[10:14]),
        Message(role="assistant", content=[blocks[15], blocks[17], TextBlock(text="done")]),
        Message(role="user", content=[]),
    ]


class ContextStoreContract:
    """The contract every ContextStore must meet; subclass it and provide ``factory``."""

    @pytest.fixture
    def factory(self) -> StoreFactory:
        raise NotImplementedError("provide a `factory` fixture returning a StoreFactory")

    # -- ordering and appends ------------------------------------------------------------------

    async def test_new_store_is_empty(self, factory: StoreFactory) -> None:
        store = await factory.new()
        assert await store.get_history() == []
        assert await store.get_context_tokens() == (0, 0)

    async def test_session_id_is_stable_and_unique(self, factory: StoreFactory) -> None:
        a, b = await factory.new(), await factory.new()
        assert a.session_id == a.session_id
        assert isinstance(a.session_id, str) and a.session_id
        assert a.session_id != b.session_id

    async def test_append_keeps_order(self, factory: StoreFactory) -> None:
        store = await factory.new()
        sent = [text("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(120)]
        for msg in sent:
            await store.append(msg)
        assert await store.get_history() == sent

    async def test_append_many_then_append(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.append(text("user", "first"))
        batch = [text("assistant", f"b{i}") for i in range(25)]
        await store.append_many(batch)
        await store.append_many([])
        await store.append(text("user", "last"))
        history = await store.get_history()
        assert history == [text("user", "first"), *batch, text("user", "last")]

    async def test_append_many_accepts_any_iterable(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.append_many(text("user", f"g{i}") for i in range(5))
        assert [m.text for m in await store.get_history()] == [f"g{i}" for i in range(5)]

    async def test_history_is_a_copy(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.append(text("user", "kept"))
        history = await store.get_history()
        history.append(text("user", "not stored"))
        history.clear()
        assert await store.get_history() == [text("user", "kept")]

    async def test_concurrent_appends_keep_every_message(self, factory: StoreFactory) -> None:
        store = await factory.new()
        sent = [text("user", f"task {i}") for i in range(200)]
        await asyncio.gather(*(store.append(m) for m in sent))
        history = await store.get_history()
        assert len(history) == len(sent)
        assert sorted(m.text for m in history) == sorted(m.text for m in sent)

    # -- every block type ----------------------------------------------------------------------

    async def test_every_block_type_round_trips(self, factory: StoreFactory) -> None:
        store = await factory.new()
        sent = every_block_message()
        await store.append(sent[0])
        await store.append_many(sent[1:])
        got = await store.get_history()
        assert got == sent
        assert [type(b) for m in got for b in m.content] == [type(b) for m in sent for b in m.content]
        signed = got[2].content[0]
        assert isinstance(signed, ReasoningBlock) and signed.signature == "EqQBCkYIARgCKkDsig=="

    # -- clear ---------------------------------------------------------------------------------

    async def test_clear_forgets_messages_and_tokens(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.append_many([text("user", "a"), text("assistant", "b")])
        await store.set_context_tokens(10, 20)
        await store.clear()
        assert await store.get_history() == []
        assert await store.get_context_tokens() == (0, 0)
        await store.append(text("user", "again"))
        assert await store.get_history() == [text("user", "again")]

    # -- fork ----------------------------------------------------------------------------------

    async def test_fork_copies_history_and_tokens(self, factory: StoreFactory) -> None:
        parent = await factory.new()
        await parent.append_many(every_block_message())
        await parent.set_context_tokens(123, 45)
        child = await parent.fork()
        assert child.session_id != parent.session_id
        assert await child.get_history() == every_block_message()
        assert await child.get_context_tokens() == (123, 45)

    async def test_fork_isolated_under_appends_both_ways(self, factory: StoreFactory) -> None:
        parent = await factory.new()
        await parent.append_many([text("user", "shared 1"), text("assistant", "shared 2")])
        child = await parent.fork()
        await parent.append(text("user", "parent only"))
        await child.append(text("user", "child only"))
        assert [m.text for m in await parent.get_history()] == ["shared 1", "shared 2", "parent only"]
        assert [m.text for m in await child.get_history()] == ["shared 1", "shared 2", "child only"]

    async def test_fork_isolated_under_clear_both_ways(self, factory: StoreFactory) -> None:
        parent = await factory.new()
        await parent.append_many([text("user", "p1"), text("assistant", "p2")])
        child = await parent.fork()
        await parent.clear()
        assert [m.text for m in await child.get_history()] == ["p1", "p2"]
        await parent.append(text("user", "new parent"))
        other = await child.fork()
        await child.clear()
        assert [m.text for m in await other.get_history()] == ["p1", "p2"]
        assert [m.text for m in await parent.get_history()] == ["new parent"]
        assert await child.get_history() == []

    async def test_fork_tokens_are_independent(self, factory: StoreFactory) -> None:
        parent = await factory.new()
        await parent.set_context_tokens(5, 6)
        child = await parent.fork()
        await child.add_context_tokens(1, 1)
        await parent.set_context_tokens(100, 200)
        assert await child.get_context_tokens() == (6, 7)
        assert await parent.get_context_tokens() == (100, 200)

    async def test_forks_of_forks(self, factory: StoreFactory) -> None:
        root = await factory.new()
        await root.append(text("user", "r0"))
        a = await root.fork()
        await a.append(text("assistant", "a1"))
        b = await a.fork()
        await b.append(text("user", "b2"))
        await a.append(text("user", "a2"))
        await root.append(text("assistant", "r1"))
        c = await b.fork()
        await c.append(text("assistant", "c3"))
        assert [m.text for m in await root.get_history()] == ["r0", "r1"]
        assert [m.text for m in await a.get_history()] == ["r0", "a1", "a2"]
        assert [m.text for m in await b.get_history()] == ["r0", "a1", "b2"]
        assert [m.text for m in await c.get_history()] == ["r0", "a1", "b2", "c3"]

    async def test_fork_of_empty_store(self, factory: StoreFactory) -> None:
        parent = await factory.new()
        child = await parent.fork()
        await child.append(text("user", "x"))
        assert await parent.get_history() == []
        assert [m.text for m in await child.get_history()] == ["x"]

    # -- tokens --------------------------------------------------------------------------------

    async def test_tokens_set_get_add(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.set_context_tokens(100, 7)
        assert await store.get_context_tokens() == (100, 7)
        await store.add_context_tokens(11, 3)
        await store.add_context_tokens(0, 0)
        assert await store.get_context_tokens() == (111, 10)
        await store.set_context_tokens(1, 2)
        assert await store.get_context_tokens() == (1, 2)

    async def test_add_tokens_on_fresh_store(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.add_context_tokens(3, 4)
        assert await store.get_context_tokens() == (3, 4)

    async def test_concurrent_token_adds_are_not_lost(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await asyncio.gather(*(store.add_context_tokens(1, 2) for _ in range(50)))
        assert await store.get_context_tokens() == (50, 100)

    # -- list_sessions -------------------------------------------------------------------------

    async def test_list_sessions_describes_this_session(self, factory: StoreFactory) -> None:
        store = await factory.new()
        long_text = "x" * 100
        await store.append_many(
            [
                Message(role="system", content=[TextBlock(text="system prompt")]),
                Message(
                    role="user",
                    content=[ImageBlock(media_type="image/png", data=b"1"), TextBlock(text=long_text)],
                ),
                text("assistant", "ok"),
            ]
        )
        await store.set_context_tokens(42, 8)
        infos = {i.session_id: i for i in await store.list_sessions()}
        info = infos[store.session_id]
        assert info.message_count == 3
        assert info.preview == "x" * 80 + "..."
        assert (info.input_tokens, info.output_tokens) == (42, 8)
        assert isinstance(info.created_at, str)

    async def test_list_sessions_short_preview(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.append(text("user", "short question"))
        infos = {i.session_id: i for i in await store.list_sessions()}
        assert infos[store.session_id].preview == "short question"

    # -- from_history / from_context ----------------------------------------------------------

    async def test_from_history(self, factory: StoreFactory) -> None:
        history = every_block_message()
        store = await factory.from_history(history)
        assert await store.get_history() == history
        await store.append(text("user", "more"))
        assert len(history) == len(every_block_message())

    async def test_from_context_copies_another_store(self, factory: StoreFactory) -> None:
        source = await factory.new()
        await source.append_many([text("user", "q"), text("assistant", "a")])
        copied = await factory.from_context(source)
        assert await copied.get_history() == await source.get_history()
        assert copied.session_id != source.session_id
        await copied.append(text("user", "only in copy"))
        assert len(await source.get_history()) == 2
