"""The checkpoint capability (and pop dropping checkpoints) as pytest suites."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest

from ..checkpoints import Checkpoint, CheckpointStore
from ..context import ContextStore
from ..errors import CheckpointError
from ..messages import Message
from ..tokens import estimate_tokens
from .samples import StoreFactory, every_block_message, text

__all__ = ["CheckpointStoreContract", "PopCheckpointContract"]


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

    async def test_tail_read_reaches_into_the_summary(self, factory: StoreFactory) -> None:
        store, sent = await self._filled(factory, 10)
        summary = _summary("of m0-m5")
        await _checkpoint_store(store).add_checkpoint(Checkpoint(position=6, summary=summary))
        view = await store.get_history()
        assert view == [*summary, *sent[6:]]
        for n in range(len(view) + 3):
            assert await store.get_tail(n) == (view[-n:] if n else []), n
        await _checkpoint_store(store).add_checkpoint(Checkpoint(position=10, summary=summary))
        assert await store.get_tail(1) == summary[-1:]  # nothing after the checkpoint yet
        assert await store.get_tail(5) == summary

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
