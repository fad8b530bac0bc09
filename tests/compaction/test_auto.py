"""compact_context and AutoCompactStore: checkpoints on memory stores, races, the lossy fallback."""

from __future__ import annotations

import asyncio
import logging

import pytest

from axio_context import (
    AutoCompactStore,
    Checkpoint,
    ContextStore,
    MemoryContextStore,
    Message,
    TextBlock,
    compact_context,
)
from axio_context.blocks import ToolUseBlock
from axio_context.codec import decode_messages_msgpack, encode_messages_msgpack
from axio_context.compaction import (
    SUMMARY_ACK,
    ExtractiveSummarizer,
    is_summary_pair,
    is_synthetic_result,
    summary_messages,
    supports_checkpoints,
    tool_pair_problems,
)
from axio_context.errors import CheckpointsUnsupportedError
from axio_context.testing import CheckpointStoreContract, ContextStoreContract, PopCheckpointContract, text
from axio_context.tokens import estimate_tokens
from tests.compaction.test_pairs import call, results
from tests.compaction.test_strategies import Recorder, session, turn


async def broken(messages: list[Message], system_prompt: str, /) -> str:
    raise ConnectionError("summarizer unreachable")


class CountingStore(MemoryContextStore):
    """A memory store that counts how often the transcript is read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get_history(self) -> list[Message]:
        self.reads += 1
        return await super().get_history()

    async def get_full_history(self) -> list[Message]:
        self.reads += 1
        return await super().get_full_history()


class Minimal(ContextStore):
    """A third-party store with only axio's abstract methods plus clear and tokens: no checkpoints."""

    def __init__(self) -> None:
        self.items: list[Message] = []
        self.tokens = (0, 0)

    async def append(self, message: Message) -> None:
        self.items.append(message)

    async def get_history(self) -> list[Message]:
        return list(self.items)

    async def clear(self) -> None:
        self.items.clear()
        self.tokens = (0, 0)

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        self.tokens = (input_tokens, output_tokens)

    async def get_context_tokens(self) -> tuple[int, int]:
        return self.tokens


class Gate:
    """A summarizer that waits until released, so a test can act while it 'thinks'."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.inputs: list[list[Message]] = []
        self.model = "gate-model"

    async def __call__(self, messages: list[Message], system_prompt: str, /) -> str:
        self.inputs.append(messages)
        self.started.set()
        await self.release.wait()
        return f"gated summary {len(self.inputs)}"


# --- compact_context ------------------------------------------------------------------------------


async def test_compact_context_returns_summary_ack_and_recent() -> None:
    history = session(4)
    store = MemoryContextStore(history)
    recorder = Recorder()
    compacted = await compact_context(store, recorder, keep_recent=4)
    assert compacted == [*summary_messages("summary #1 of 12 messages"), *history[-4:]]
    assert compacted is not None and compacted[1].text == SUMMARY_ACK
    assert recorder.inputs == [history[:12]]
    assert await store.get_history() == history  # only read


async def test_compact_context_never_splits_parallel_calls() -> None:
    history = [text("user", "q"), call("a", "b", "c"), results("c", "b", "a"), text("assistant", "done")]
    compacted = await compact_context(MemoryContextStore(history), Recorder(), keep_recent=2)
    assert compacted is not None
    assert compacted[2:] == history[1:]
    assert tool_pair_problems(compacted) == []
    # a call still awaiting its results is never summarized away from them
    pending = [text("user", "q"), text("assistant", "a"), call("x")]
    compacted = await compact_context(MemoryContextStore(pending), Recorder(), keep_recent=0)
    assert compacted is not None and compacted[2:] == [call("x")]


async def test_compact_context_nothing_to_do() -> None:
    assert await compact_context(MemoryContextStore(session(1)), Recorder(), keep_recent=6) is None
    assert await compact_context(MemoryContextStore([]), Recorder()) is None
    # only an earlier summary before the recent part: nothing new to summarize
    history = [*summary_messages("old"), *session(1)]
    assert await compact_context(MemoryContextStore(history), Recorder(), keep_recent=4) is None
    with pytest.raises(ValueError, match="keep_recent"):
        await compact_context(MemoryContextStore(history), Recorder(), keep_recent=-1)


async def test_compact_context_failure_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryContextStore(session(4))
    with caplog.at_level(logging.WARNING, logger="axio_context.compaction"):
        assert await compact_context(store, broken, keep_recent=2) is None
    assert "Context compaction failed, keeping original history" in caplog.text
    assert "summarizer unreachable" in caplog.text
    assert await store.get_history() == session(4)

    async def blank(messages: list[Message], system_prompt: str, /) -> str:
        return "  "

    assert await compact_context(store, blank, keep_recent=2) is None


async def test_compact_context_updates_an_earlier_summary() -> None:
    history = [*summary_messages("earlier summary"), *session(3)]
    recorder = Recorder()
    compacted = await compact_context(MemoryContextStore(history), recorder, keep_recent=4)
    assert compacted is not None
    assert recorder.inputs[0][:2] == summary_messages("earlier summary")
    assert sum(is_summary_pair(compacted, i) for i in range(len(compacted))) == 1


async def test_compact_context_default_summarizer_is_offline() -> None:
    compacted = await compact_context(MemoryContextStore(session(4)), None, keep_recent=4)
    assert compacted is not None and compacted[0].text.startswith("Summary of the earlier conversation")


# --- AutoCompactStore on a checkpoint store ------------------------------------------------------


async def test_below_threshold_reads_nothing() -> None:
    inner = CountingStore()
    await inner.append_many(session(5))
    store = AutoCompactStore(inner, Recorder(), max_tokens=1_000)
    for _ in range(50):
        await store.add_context_tokens(1_000, 10)
    assert inner.reads == 0
    assert await store.get_context_tokens() == (50_000, 500)
    assert await store.list_checkpoints() == []


async def test_compaction_writes_a_checkpoint_and_keeps_the_transcript() -> None:
    inner = MemoryContextStore()
    recorder = Recorder()
    store = AutoCompactStore(inner, recorder, keep_recent=4, max_tokens=500)
    history = session(5)
    await store.append_many(history)
    await store.set_context_tokens(10, 20)
    await store.add_context_tokens(501, 7)
    [cp] = await store.list_checkpoints()
    assert cp.position == 16 and cp.summarizer == "recorder" and cp.id > 0 and cp.created_at
    assert cp.summary == summary_messages("summary #1 of 16 messages")
    assert cp.tokens_before == estimate_tokens(history)
    assert cp.tokens_after == estimate_tokens([*cp.summary, *history[16:]])
    assert await store.get_history() == [*cp.summary, *history[16:]]
    assert await store.get_full_history() == history
    assert await inner.get_full_history() == history
    assert await store.get_context_tokens() == (511, 27)  # totals are not touched
    assert await store.estimated_view_tokens() == cp.tokens_after


async def test_repeated_compactions_update_the_summary() -> None:
    recorder = Recorder()
    store = AutoCompactStore(MemoryContextStore(), recorder, keep_recent=4, max_tokens=100)
    history = session(3)
    await store.append_many(history)
    assert await store.compact()
    more = [*turn(3), *turn(4)]
    await store.append_many(more)
    assert await store.compact()
    first, second = await store.list_checkpoints()
    assert (first.position, second.position) == (8, 16)
    # the second summarizer call got the first summary plus only the messages since it
    assert recorder.inputs[1] == [*first.summary, *history[8:], *more[:4]]
    view = await store.get_history()
    assert view == [*second.summary, *more[4:]]
    assert sum(is_summary_pair(view, i) for i in range(len(view))) == 1
    assert await store.get_full_history() == [*history, *more]
    # nothing new to summarize: no third checkpoint
    assert not await store.compact()
    assert len(await store.list_checkpoints()) == 2


async def test_repeated_extractive_compactions_stay_bounded() -> None:
    summarizer = ExtractiveSummarizer(max_chars=1_200)
    store = AutoCompactStore(MemoryContextStore(), summarizer, keep_recent=4, max_tokens=10)
    await store.append(text("user", "Original goal: ship the release"))
    for i in range(15):
        await store.append_many(turn(i))
        await store.add_context_tokens(11, 1)
    view = await store.get_history()
    assert is_summary_pair(view)
    assert len(view[0].text) <= 1_200
    assert "(first) Original goal: ship the release" in view[0].text
    assert view[0].text.count("Summary of the earlier conversation") == 1
    assert len(await store.list_checkpoints()) == 15
    assert len(await store.get_full_history()) == 61


async def test_summarizer_failure_leaves_everything(caplog: pytest.LogCaptureFixture) -> None:
    store = AutoCompactStore(MemoryContextStore(), broken, keep_recent=2, max_tokens=10)
    await store.append_many(session(3))
    await store.add_context_tokens(11, 0)
    assert await store.list_checkpoints() == []
    assert await store.get_history() == session(3)
    assert "summarizer unreachable" in caplog.text


async def test_threshold_from_the_summarizer() -> None:
    class Model:
        context_window = 10_000

    class WithModel(Recorder):
        model = Model()

    class WithWindow(Recorder):
        context_window = 2_000

    assert AutoCompactStore(MemoryContextStore(), WithModel()).max_tokens == 7_500
    assert AutoCompactStore(MemoryContextStore(), WithWindow(), threshold=0.5).max_tokens == 1_000
    assert AutoCompactStore(MemoryContextStore(), Recorder()).max_tokens == 96_000
    assert AutoCompactStore(MemoryContextStore(), Recorder(), max_tokens=5).max_tokens == 5
    with pytest.raises(ValueError, match="keep_recent"):
        AutoCompactStore(MemoryContextStore(), Recorder(), keep_recent=-2)


async def test_maybe_compact_uses_the_cached_estimate() -> None:
    inner = CountingStore()
    store = AutoCompactStore(inner, Recorder(), keep_recent=2, max_tokens=estimate_tokens(session(2)))
    await store.append_many(session(2))
    assert not await store.maybe_compact()
    assert inner.reads == 0
    await store.append_many(turn(2))
    assert await store.maybe_compact()
    assert len(await store.list_checkpoints()) == 1


async def test_view_repairs_interrupted_calls_without_rewriting() -> None:
    inner = MemoryContextStore()
    store = AutoCompactStore(inner, Recorder())
    crashed = [text("user", "go"), call("a", "b"), text("user", "are you there?")]
    await store.append_many(crashed)
    view = await store.get_history()
    assert [is_synthetic_result(b) for b in view[2].content] == [True, True, False]
    assert tool_pair_problems(view) == []
    assert await inner.get_history() == crashed
    # a call at the very end is awaiting its results: left alone
    await store.append(call("c"))
    assert (await store.get_history())[-1] == call("c")
    raw = AutoCompactStore(inner, Recorder(), repair_view=False)
    assert await raw.get_history() == await inner.get_history()


async def test_fork_and_pop_are_forwarded() -> None:
    store = AutoCompactStore(MemoryContextStore(), Recorder(), keep_recent=2, max_tokens=50)
    await store.append_many(session(2))
    await store.compact()
    child = await store.fork()
    assert isinstance(child, AutoCompactStore) and child.max_tokens == 50
    assert await child.list_checkpoints() == await store.list_checkpoints()
    await child.append(text("user", "child"))
    assert await child.pop() == text("user", "child")
    assert await store.get_history() == await child.get_history()


# --- races ---------------------------------------------------------------------------------------


async def test_appends_racing_a_slow_summarizer_are_all_kept() -> None:
    gate = Gate()
    store = AutoCompactStore(MemoryContextStore(), gate, keep_recent=2, max_tokens=100)
    history = session(4)
    await store.append_many(history)
    compaction = asyncio.create_task(store.add_context_tokens(101, 1))
    await gate.started.wait()
    racing = [text("user" if i % 2 else "assistant", f"while summarizing {i}") for i in range(30)]
    await asyncio.gather(*(store.append(m) for m in racing[:20]))
    # a second trigger while the first compaction runs does not start another
    await store.add_context_tokens(500, 1)
    await store.append_many(racing[20:])
    gate.release.set()
    await compaction
    assert len(gate.inputs) == 1
    [cp] = await store.list_checkpoints()
    assert cp.position == 13  # 14 would split turn 3's call from its result
    full = await store.get_full_history()
    assert full == [*history, *racing]
    assert await store.get_history() == [*summary_messages("gated summary 1"), *history[13:], *racing]


async def test_one_compaction_at_a_time_even_across_wrappers() -> None:
    gate = Gate()
    inner = MemoryContextStore(session(4))
    a = AutoCompactStore(inner, gate, keep_recent=2, max_tokens=10)
    b = AutoCompactStore(inner, gate, keep_recent=2, max_tokens=10)
    first = asyncio.create_task(a.compact())
    await gate.started.wait()
    await b.add_context_tokens(11, 0)  # skipped: a compaction of this store is running
    waiting = asyncio.create_task(b.compact())  # an explicit compact() waits its turn
    await asyncio.sleep(0)
    assert len(gate.inputs) == 1
    gate.release.set()
    assert await first
    assert not await waiting  # nothing new to summarize afterwards
    assert len(await inner.list_checkpoints()) == 1


async def test_history_shrinking_during_summary_abandons_the_checkpoint(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gate = Gate()
    inner = MemoryContextStore(session(3))
    store = AutoCompactStore(inner, gate, keep_recent=1, max_tokens=10)
    task = asyncio.create_task(store.compact())
    await gate.started.wait()
    await inner.clear()
    gate.release.set()
    assert not await task
    assert await inner.list_checkpoints() == []
    assert "history changed meanwhile" in caplog.text


# --- the lossy fallback ------------------------------------------------------------------------------


async def test_lossy_fallback_on_a_store_without_checkpoints() -> None:
    inner = Minimal()
    assert not supports_checkpoints(inner)
    gate = Gate()
    store = AutoCompactStore(inner, gate, keep_recent=4, max_tokens=100)
    assert not store.supports_checkpoints
    history = session(4)
    await store.append_many(history)
    await store.set_context_tokens(40, 4)
    task = asyncio.create_task(store.add_context_tokens(200, 1))
    await gate.started.wait()
    late = [text("user", "arrived during the summary")]
    await store.append_many(late)
    gate.release.set()
    await task
    # Lossy: the store now holds only the compacted list; the old messages are gone from it.
    assert inner.items == [*summary_messages("gated summary 1"), *history[-4:], *late]
    assert await store.get_full_history() == inner.items
    assert inner.tokens == (240, 5)
    assert await store.list_checkpoints() == []
    with pytest.raises(CheckpointsUnsupportedError, match="Minimal keeps no checkpoints"):
        await store.add_checkpoint(Checkpoint(position=0, summary=[]))
    assert await store.estimated_view_tokens() == estimate_tokens(inner.items)
    with pytest.raises(NotImplementedError, match="pop"):
        await store.pop()


async def test_lossy_fallback_refuses_when_history_was_rewritten(caplog: pytest.LogCaptureFixture) -> None:
    inner = Minimal()
    gate = Gate()
    store = AutoCompactStore(inner, gate, keep_recent=2, max_tokens=10)
    await store.append_many(session(3))
    task = asyncio.create_task(store.compact())
    await gate.started.wait()
    await inner.clear()
    await inner.append(text("user", "new start"))
    gate.release.set()
    assert not await task
    assert inner.items == [text("user", "new start")]
    assert "history changed (not only appends)" in caplog.text


class Decoding(Minimal):
    """A store that decodes every read afresh, as one doing I/O does: no object is shared."""

    async def get_history(self) -> list[Message]:
        return decode_messages_msgpack(encode_messages_msgpack(self.items))


async def test_lossy_fallback_compacts_a_history_holding_a_nan() -> None:
    # A NaN in a tool input never equals itself as a float: compared as objects, a history read
    # twice would always look rewritten, and the session would never compact.
    inner = Decoding()
    nan_call = Message("assistant", [ToolUseBlock("c1", "probe", {"x": float("nan")})])
    history = [text("user", "go"), nan_call, results("c1"), *session(3)]
    store = AutoCompactStore(inner, Recorder(), keep_recent=2, max_tokens=10)
    await store.append_many(history)
    assert await store.compact() is True
    assert is_summary_pair(inner.items)
    kept = inner.items[2:]
    assert 2 <= len(kept) < len(history) - 3  # the NaN call was summarized
    assert kept == history[len(history) - len(kept) :]


async def test_wrapping_a_wrapper_still_uses_checkpoints() -> None:
    inner = MemoryContextStore(session(3))
    outer = AutoCompactStore(AutoCompactStore(inner, Recorder()), Recorder(), keep_recent=2)
    assert outer.supports_checkpoints
    assert await outer.compact()
    assert len(await inner.list_checkpoints()) == 1
    lossy_outer = AutoCompactStore(AutoCompactStore(Minimal(), Recorder()), Recorder())
    assert not lossy_outer.supports_checkpoints


async def test_checkpoint_position_ignores_synthetic_results_in_the_view() -> None:
    # An interrupted call early on: the view gains a synthetic message the transcript lacks.
    history = [text("user", "go"), call("a"), text("assistant", "retry"), *session(3)]
    inner = MemoryContextStore(history)
    outer = AutoCompactStore(AutoCompactStore(inner, Recorder()), Recorder(), keep_recent=4)
    assert len(await outer.get_history()) == len(history) + 1
    assert await outer.compact()
    [cp] = await inner.list_checkpoints()
    assert cp.position == len(history) - 4
    assert (await inner.get_history())[2:] == history[-4:]


# --- the whole contract on the wrapper -----------------------------------------------------------------


class AutoFactory:
    async def new(self) -> ContextStore:
        return AutoCompactStore(MemoryContextStore(), Recorder())

    async def from_history(self, history: list[Message]) -> ContextStore:
        return AutoCompactStore(await MemoryContextStore.from_history(history), Recorder())

    async def from_context(self, context: ContextStore) -> ContextStore:
        return AutoCompactStore(await MemoryContextStore.from_context(context), Recorder())


class TestAutoCompactStoreContract(ContextStoreContract, CheckpointStoreContract, PopCheckpointContract):
    @pytest.fixture
    def factory(self) -> AutoFactory:
        return AutoFactory()


def test_message_text_helper_is_used_for_summaries() -> None:
    assert summary_messages("x")[0].content == [TextBlock(text="x")]
