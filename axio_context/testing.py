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
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
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
from .checkpoints import Checkpoint, CheckpointStore
from .context import ContextStore
from .errors import CheckpointError
from .messages import Message
from .tokens import estimate_tokens

__all__ = [
    "CheckpointStoreContract",
    "ContextStoreContract",
    "PopCheckpointContract",
    "StoreFactory",
    "every_block_message",
    "sample_blocks",
    "text",
]


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


def _checkpoint_store(store: ContextStore) -> CheckpointStore:
    assert isinstance(store, CheckpointStore), f"{type(store).__name__} does not implement CheckpointStore"
    return store


def _summary(label: str) -> list[Message]:
    return [text("user", f"summary {label}"), text("assistant", "Understood, context restored.")]


class CheckpointStoreContract:
    """The checkpoint capability (``axio_context.checkpoints.CheckpointStore``) as a pytest suite.

    Mix it into a test class next to :class:`ContextStoreContract`, with the same ``factory``
    fixture; ``factory.new()`` must return a store that implements ``CheckpointStore``.
    ``estimated_view_tokens()`` must equal :func:`~axio_context.tokens.estimate_tokens` of
    ``get_history()`` (the default estimator), whatever the store caches to get there.
    """

    @pytest.fixture
    def factory(self) -> StoreFactory:
        raise NotImplementedError("provide a `factory` fixture returning a StoreFactory")

    async def _filled(self, factory: StoreFactory, n: int) -> tuple[ContextStore, list[Message]]:
        store = await factory.new()
        sent = [text("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(n)]
        await store.append_many(sent)
        return store, sent

    async def test_new_store_has_no_checkpoints(self, factory: StoreFactory) -> None:
        store = _checkpoint_store(await factory.new())
        assert await store.list_checkpoints() == []
        assert await store.get_full_history() == []
        assert await store.estimated_view_tokens() == 0

    async def test_checkpoint_replaces_prefix_in_view_only(self, factory: StoreFactory) -> None:
        store, sent = await self._filled(factory, 10)
        cps = _checkpoint_store(store)
        summary = _summary("of m0-m5")
        stored = await cps.add_checkpoint(
            Checkpoint(position=6, summary=summary, tokens_before=100, tokens_after=40, summarizer="model-x")
        )
        assert await store.get_history() == [*summary, *sent[6:]]
        assert await cps.get_full_history() == sent
        assert (stored.position, stored.summary, stored.summarizer) == (6, summary, "model-x")
        assert (stored.tokens_before, stored.tokens_after) == (100, 40)
        assert stored.id > 0
        created = datetime.fromisoformat(stored.created_at)
        assert created.utcoffset() == timedelta(0)
        assert abs((datetime.now(UTC) - created).total_seconds()) < 300
        assert await cps.list_checkpoints() == [stored]

    async def test_appends_after_checkpoint_follow_the_summary(self, factory: StoreFactory) -> None:
        store, sent = await self._filled(factory, 8)
        cps = _checkpoint_store(store)
        await cps.add_checkpoint(Checkpoint(position=5, summary=_summary("a")))
        later = [text("user", "after 1"), text("assistant", "after 2")]
        await store.append(later[0])
        await store.append_many(later[1:])
        assert await store.get_history() == [*_summary("a"), *sent[5:], *later]
        assert await cps.get_full_history() == [*sent, *later]

    async def test_latest_checkpoint_wins_and_all_are_listed(self, factory: StoreFactory) -> None:
        store, sent = await self._filled(factory, 12)
        cps = _checkpoint_store(store)
        first = await cps.add_checkpoint(Checkpoint(position=4, summary=_summary("1")))
        second = await cps.add_checkpoint(Checkpoint(position=9, summary=_summary("2"), summarizer="s2"))
        assert await store.get_history() == [*_summary("2"), *sent[9:]]
        listed = await cps.list_checkpoints()
        assert listed == [first, second]
        assert first.id < second.id
        assert await cps.get_full_history() == sent

    async def test_position_bounds(self, factory: StoreFactory) -> None:
        store, sent = await self._filled(factory, 4)
        cps = _checkpoint_store(store)
        for bad in (5, 100, -1):
            with pytest.raises(CheckpointError, match="position"):
                await cps.add_checkpoint(Checkpoint(position=bad, summary=_summary("bad")))
        assert await cps.list_checkpoints() == []
        assert await store.get_history() == sent
        await cps.add_checkpoint(Checkpoint(position=0, summary=_summary("zero")))
        assert await store.get_history() == [*_summary("zero"), *sent]
        await cps.add_checkpoint(Checkpoint(position=4, summary=_summary("all")))
        assert await store.get_history() == _summary("all")
        assert await cps.get_full_history() == sent

    async def test_summary_keeps_every_block_type(self, factory: StoreFactory) -> None:
        store, sent = await self._filled(factory, 3)
        cps = _checkpoint_store(store)
        summary = every_block_message()
        await cps.add_checkpoint(Checkpoint(position=2, summary=summary))
        assert await store.get_history() == [*summary, sent[2]]
        [stored] = await cps.list_checkpoints()
        assert stored.summary == summary

    async def test_estimated_view_tokens_follow_the_view(self, factory: StoreFactory) -> None:
        store, _ = await self._filled(factory, 30)
        cps = _checkpoint_store(store)
        assert await cps.estimated_view_tokens() == estimate_tokens(await store.get_history())
        await store.append_many(every_block_message())
        assert await cps.estimated_view_tokens() == estimate_tokens(await store.get_history())
        await cps.add_checkpoint(Checkpoint(position=20, summary=_summary("x" * 500)))
        assert await cps.estimated_view_tokens() == estimate_tokens(await store.get_history())
        await store.append(text("user", "y" * 1000))
        assert await cps.estimated_view_tokens() == estimate_tokens(await store.get_history())

    async def test_concurrent_appends_and_checkpoint(self, factory: StoreFactory) -> None:
        store, sent = await self._filled(factory, 10)
        cps = _checkpoint_store(store)
        extra = [text("user", f"race {i}") for i in range(40)]
        await asyncio.gather(
            *(store.append(m) for m in extra[:20]),
            cps.add_checkpoint(Checkpoint(position=7, summary=_summary("race"))),
            *(store.append(m) for m in extra[20:]),
        )
        full = await cps.get_full_history()
        assert full[:10] == sent
        assert sorted(m.text for m in full[10:]) == sorted(m.text for m in extra)
        assert await store.get_history() == [*_summary("race"), *full[7:]]

    async def test_list_sessions_counts_the_full_transcript(self, factory: StoreFactory) -> None:
        store, _ = await self._filled(factory, 9)
        await _checkpoint_store(store).add_checkpoint(Checkpoint(position=8, summary=_summary("s")))
        infos = {i.session_id: i for i in await store.list_sessions()}
        assert infos[store.session_id].message_count == 9
        assert infos[store.session_id].preview == "m0"

    async def test_clear_drops_checkpoints(self, factory: StoreFactory) -> None:
        store, _ = await self._filled(factory, 6)
        cps = _checkpoint_store(store)
        await cps.add_checkpoint(Checkpoint(position=3, summary=_summary("c")))
        await store.clear()
        assert await cps.list_checkpoints() == []
        assert await store.get_history() == []
        assert await cps.get_full_history() == []
        assert await cps.estimated_view_tokens() == 0
        await store.append(text("user", "fresh"))
        assert await store.get_history() == [text("user", "fresh")]

    async def test_fork_inherits_checkpoints_isolated_both_ways(self, factory: StoreFactory) -> None:
        parent, sent = await self._filled(factory, 10)
        pcp = _checkpoint_store(parent)
        inherited = await pcp.add_checkpoint(Checkpoint(position=4, summary=_summary("shared")))
        child = await parent.fork()
        ccp = _checkpoint_store(child)
        assert await ccp.list_checkpoints() == [inherited]
        assert await child.get_history() == [*_summary("shared"), *sent[4:]]
        assert await ccp.get_full_history() == sent

        await child.append(text("user", "child only"))
        child_cp = await ccp.add_checkpoint(Checkpoint(position=9, summary=_summary("child")))
        await parent.append(text("user", "parent only"))
        parent_cp = await pcp.add_checkpoint(Checkpoint(position=6, summary=_summary("parent")))

        assert await ccp.list_checkpoints() == [inherited, child_cp]
        assert await pcp.list_checkpoints() == [inherited, parent_cp]
        assert await child.get_history() == [*_summary("child"), sent[9], text("user", "child only")]
        assert await parent.get_history() == [*_summary("parent"), *sent[6:], text("user", "parent only")]
        assert await ccp.get_full_history() == [*sent, text("user", "child only")]
        assert await pcp.get_full_history() == [*sent, text("user", "parent only")]
        assert await ccp.estimated_view_tokens() == estimate_tokens(await child.get_history())
        assert await pcp.estimated_view_tokens() == estimate_tokens(await parent.get_history())

    async def test_fork_then_parent_clear_keeps_child_checkpoints(self, factory: StoreFactory) -> None:
        parent, sent = await self._filled(factory, 5)
        await _checkpoint_store(parent).add_checkpoint(Checkpoint(position=2, summary=_summary("p")))
        child = await parent.fork()
        await parent.clear()
        assert await child.get_history() == [*_summary("p"), *sent[2:]]
        assert len(await _checkpoint_store(child).list_checkpoints()) == 1


class PopCheckpointContract:
    """For stores with ``pop()``: popping drops the checkpoints that covered the popped message."""

    @pytest.fixture
    def factory(self) -> StoreFactory:
        raise NotImplementedError("provide a `factory` fixture returning a StoreFactory")

    async def test_pop_drops_checkpoints_beyond_the_new_end(self, factory: StoreFactory) -> None:
        store = await factory.new()
        cps = _checkpoint_store(store)
        sent = [text("user", f"p{i}") for i in range(6)]
        await store.append_many(sent)
        kept = await cps.add_checkpoint(Checkpoint(position=4, summary=_summary("kept")))
        await cps.add_checkpoint(Checkpoint(position=6, summary=_summary("covers all")))
        assert await store.get_history() == _summary("covers all")
        pop: Callable[[], Awaitable[Message | None]] = store.pop  # type: ignore[attr-defined]
        assert await pop() == sent[5]
        assert await cps.list_checkpoints() == [kept]
        assert await store.get_history() == [*_summary("kept"), sent[4]]
        assert await cps.get_full_history() == sent[:5]
        assert await cps.estimated_view_tokens() == estimate_tokens(await store.get_history())
