"""The ContextStore contract as a pytest suite: ordering, every block type, clear, fork, tokens, listing."""

from __future__ import annotations

import asyncio

import pytest

from ..blocks import (
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolUseBlock,
)
from ..errors import DecodeError
from ..messages import Message
from .samples import StoreFactory, every_block_message, text
from .tails import ExtrasAndTailContract

__all__ = ["ContextStoreContract"]


class ContextStoreContract(ExtrasAndTailContract):
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

    async def test_append_refuses_what_it_could_not_give_back(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.append(text("user", "kept"))
        bad = Message(role="assistant", content=[ToolUseBlock(id="t", name="f", input=None)])  # type: ignore[arg-type]
        deep: dict[str, object] = {}
        for _ in range(1_000):
            deep = {"a": deep}
        too_deep = Message(role="assistant", content=[ToolUseBlock(id="t", name="f", input=deep)])
        for refused in (bad, too_deep):
            with pytest.raises(DecodeError, match="message 0"):
                await store.append(refused)
            with pytest.raises(DecodeError, match="message 1"):
                await store.append_many([text("user", "not kept either"), refused])
        assert await store.get_history() == [text("user", "kept")]

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

    async def test_set_tokens_refuses_negative_and_too_large(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.set_context_tokens(5, 6)
        for bad in ((-1, 0), (0, -1), (2**63, 0), (0, 2**63)):
            with pytest.raises(ValueError, match="tokens"):
                await store.set_context_tokens(*bad)
            assert await store.get_context_tokens() == (5, 6)
        await store.set_context_tokens(2**63 - 1, 0)
        assert await store.get_context_tokens() == (2**63 - 1, 0)

    async def test_add_tokens_refuses_totals_below_zero(self, factory: StoreFactory) -> None:
        store = await factory.new()
        await store.set_context_tokens(5, 6)
        await store.add_context_tokens(-2, 0)  # a correction within the total is fine
        assert await store.get_context_tokens() == (3, 6)
        for bad in ((-4, 0), (0, -7), (1, -7)):
            with pytest.raises(ValueError, match="tokens"):
                await store.add_context_tokens(*bad)
            assert await store.get_context_tokens() == (3, 6)

    async def test_add_tokens_refuses_totals_past_int64(self, factory: StoreFactory) -> None:
        store = await factory.new()
        top = 2**63 - 1
        await store.set_context_tokens(top - 1, 0)
        await store.add_context_tokens(1, 0)
        assert await store.get_context_tokens() == (top, 0)
        for bad in ((1, 0), (0, 2**63), (-1, 2**64)):
            with pytest.raises(ValueError, match="tokens"):
                await store.add_context_tokens(*bad)
            assert await store.get_context_tokens() == (top, 0)

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
