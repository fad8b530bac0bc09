"""Compaction regressions: the system prompt survives compaction, racing clears and pops abandon a
checkpoint, a summarizer of the wrong kind is refused, compact_context repairs tool pairs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from axio_context import (
    AutoCompactStore,
    Checkpoint,
    MemoryContextStore,
    Message,
    ToolResultBlock,
    ToolUseBlock,
    compact_context,
)
from axio_context.compaction import (
    SUMMARY_ACK,
    ExtractiveSummarizer,
    Summarization,
    is_synthetic_result,
    summary_messages,
    tool_pair_problems,
)
from axio_context.errors import CheckpointError
from axio_context.testing import text
from tests.compaction.test_auto import Gate, Minimal
from tests.compaction.test_strategies import Recorder, session

SYSTEM = text("system", "You are a code reviewer. Never run destructive commands.")


# --- the system prompt stays the head of the view --------------------------------------------------


async def test_checkpoint_compaction_keeps_the_system_prompt_verbatim() -> None:
    recorder = Recorder()
    history = [SYSTEM, *session(4)]
    store = AutoCompactStore(MemoryContextStore(history), recorder, keep_recent=4, max_tokens=10)
    assert await store.compact()
    [cp] = await store.list_checkpoints()
    assert cp.position == 13
    assert cp.summary == [SYSTEM, *summary_messages("summary #1 of 12 messages")]
    assert recorder.inputs[0] == history[1:13]  # the system prompt is not summarized
    assert await store.get_history() == [*cp.summary, *history[13:]]
    assert await store.get_full_history() == history

    # The next compaction keeps it again and updates the summary instead of stacking one.
    more = session(2)
    await store.append_many(more)
    assert await store.compact()
    second = (await store.list_checkpoints())[-1]
    assert recorder.inputs[1][:2] == summary_messages("summary #1 of 12 messages")
    assert all(m.role != "system" for m in recorder.inputs[1])
    view = await store.get_history()
    assert view[0] == SYSTEM and [m.role for m in view].count("system") == 1
    assert view == [SYSTEM, *summary_messages("summary #2 of 10 messages"), *more[-4:]]
    assert second.position == len(history) + len(more) - 4
    assert await store.estimated_view_tokens() == second.tokens_after


async def test_default_summarizer_keeps_the_system_prompt_in_the_view() -> None:
    store = AutoCompactStore(MemoryContextStore([SYSTEM, *session(4)]), None, keep_recent=4, max_tokens=10)
    await store.add_context_tokens(5_000, 10)
    view = await store.get_history()
    assert view[0] == SYSTEM and view[1].text.startswith("Summary of the earlier conversation")


async def test_only_a_system_prompt_before_the_recent_part_is_nothing_to_compact() -> None:
    store = AutoCompactStore(MemoryContextStore([SYSTEM, *session(1)]), Recorder(), keep_recent=4)
    assert not await store.compact()
    assert await compact_context(MemoryContextStore([SYSTEM, *session(1)]), Recorder(), keep_recent=4) is None


async def test_compact_context_keeps_leading_system_messages() -> None:
    second = text("system", "Answer in English.")
    history = [SYSTEM, second, *session(3)]
    recorder = Recorder()
    compacted = await compact_context(MemoryContextStore(history), recorder, keep_recent=4)
    assert compacted == [SYSTEM, second, *summary_messages("summary #1 of 8 messages"), *history[-4:]]
    assert recorder.inputs == [history[2:10]]
    # compacting the compacted list again updates the summary and still keeps the prompts
    again = await compact_context(MemoryContextStore([*compacted, *session(2)]), ExtractiveSummarizer())
    assert again is not None and again[:2] == [SYSTEM, second] and again[3].text == SUMMARY_ACK


async def test_lossy_fallback_keeps_the_system_prompt() -> None:
    inner = Minimal()
    history: list[Message] = [SYSTEM, *session(3)]
    await inner.append_many(history)
    store = AutoCompactStore(inner, Recorder(), keep_recent=4, max_tokens=10)
    assert await store.compact()
    assert inner.items == [SYSTEM, *summary_messages("summary #1 of 8 messages"), *history[-4:]]


# --- a clear or pop while the summarizer runs abandons the checkpoint ------------------------------


def numbered(prefix: str, n: int) -> list[Message]:
    return [text("user" if i % 2 == 0 else "assistant", f"{prefix}{i}") for i in range(n)]


async def race(mutate: Callable[[AutoCompactStore], Awaitable[None]], keep_recent: int) -> AutoCompactStore:
    gate = Gate()
    store = AutoCompactStore(MemoryContextStore(), gate, keep_recent=keep_recent, max_tokens=10)
    await store.append_many(numbered("old", 6))
    task = asyncio.create_task(store.add_context_tokens(100, 1))  # over the threshold: compacts
    await gate.started.wait()
    await mutate(store)
    gate.release.set()
    await task
    return store


async def test_clear_and_continue_during_the_summary_abandons_it(caplog: pytest.LogCaptureFixture) -> None:
    async def clear_and_continue(store: AutoCompactStore) -> None:
        await store.clear()
        await store.append_many(numbered("NEW", 6))

    store = await race(clear_and_continue, keep_recent=2)
    assert await store.list_checkpoints() == []
    assert [m.text for m in await store.get_history()] == [f"NEW{i}" for i in range(6)]
    assert "history changed meanwhile" in caplog.text


async def test_retry_during_the_summary_abandons_it() -> None:
    async def retry(store: AutoCompactStore) -> None:  # a chat app's "retry" of the last reply
        await store.pop()
        await store.append(text("assistant", "old5-RETRIED"))

    store = await race(retry, keep_recent=0)
    assert await store.list_checkpoints() == []
    assert (await store.get_history())[-1] == text("assistant", "old5-RETRIED")


async def test_appends_during_the_summary_still_get_their_checkpoint() -> None:
    async def more(store: AutoCompactStore) -> None:
        await store.append_many(numbered("late", 2))

    store = await race(more, keep_recent=2)
    [cp] = await store.list_checkpoints()
    assert cp.position == 4
    assert [m.text for m in (await store.get_history())[2:]] == ["old4", "old5", "late0", "late1"]


async def test_add_checkpoint_if_view_checks_the_prefix() -> None:
    inner = MemoryContextStore(session(2))
    store = AutoCompactStore(inner, Recorder())
    checkpoint = Checkpoint(position=4, summary=summary_messages("s"))
    with pytest.raises(CheckpointError, match="changed"):
        await store.add_checkpoint(checkpoint, if_view_starts_with=[*session(2)[:3], text("user", "x")])
    assert await inner.list_checkpoints() == []
    stored = await store.add_checkpoint(checkpoint, if_view_starts_with=session(2)[:4])
    assert await inner.list_checkpoints() == [stored]


# --- a summarizer of the wrong kind is refused when it is handed over -------------------------------


class AxioTransport:
    """The shape of axio's CompletionTransport: a model with a window, and .stream()."""

    class Model:
        context_window = 1_000

    model = Model()

    async def stream(self, messages: list[Message], tools: list[object], system: str) -> AsyncIterator[str]:
        yield "..."


async def test_a_transport_is_taken_and_anything_else_refused_when_handed_over() -> None:
    store = MemoryContextStore(session(3))
    # issue 35: an axio transport is accepted (it summarizes through the transport) and sizes the
    # threshold from transport.model.context_window, as axio does
    assert AutoCompactStore(store, AxioTransport()).max_tokens == 750  # type: ignore[arg-type]
    expected = r"needs a Summarizer .* or an LLM client .*got builtins\.str"
    with pytest.raises(TypeError, match=expected) as info:
        AutoCompactStore(store, "gpt-4o", keep_recent=2)  # type: ignore[arg-type]
    assert "AutoCompactStore" in str(info.value)
    with pytest.raises(TypeError, match=r"^compact_context needs a Summarizer"):
        await compact_context(store, 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Summarization needs a Summarizer.*builtins\.str"):
        Summarization("gpt-4o")  # type: ignore[arg-type]
    assert await store.get_history() == session(3)
    # callables of every kind are still accepted
    AutoCompactStore(store, Recorder())
    AutoCompactStore(store, lambda messages, prompt: Recorder()(messages, prompt))
    assert await compact_context(store, None, keep_recent=2) is not None


# --- compact_context returns a valid list of tool pairs ----------------------------------------------


async def test_compact_context_repairs_an_interrupted_call_in_the_kept_part() -> None:
    crashed = Message(role="assistant", content=[ToolUseBlock(id="c1", name="ls", input={})])
    history = [
        *(text("user", f"q{i}") for i in range(4)),
        crashed,  # the turn crashed: no result was ever stored
        text("user", "still there?"),
        text("assistant", "yes"),
    ]
    store = MemoryContextStore(history)
    compacted = await compact_context(store, Recorder(), keep_recent=3)
    assert compacted is not None
    assert tool_pair_problems(compacted) == []
    assert compacted[2] is crashed
    synthetic, question = compacted[3].content  # the result goes first in the next user message
    assert is_synthetic_result(synthetic) and isinstance(synthetic, ToolResultBlock)
    assert synthetic.tool_use_id == "c1" and question == history[-2].content[0]
    assert compacted[4:] == history[-1:]
    assert await store.get_history() == history  # the store is only read


# --- a tool result written by a newer version still answers its call -------------------------


_NEWER_RESULT = b"""[
 {"role":"user","content":[{"type":"text","text":"read the report"}]},
 {"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"fetch","input":{}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":false,
   "content":[{"type":"text","text":"Q3 up 12%"},{"type":"document","data":"JVBERi0="}]}]},
 {"role":"assistant","content":[{"type":"text","text":"Revenue grew 12%."}]}]"""


async def test_a_result_with_a_block_type_this_version_does_not_know_still_answers_its_call() -> None:
    """Kept whole as an UnknownBlock (so it is written back as it came), it is still the call's
    result: no synthetic 'interrupted' result next to it, no cut between the two, pruned with
    its call, and summarized as answered."""
    from axio_context import UnknownBlock
    from axio_context.codec import decode_messages_json
    from axio_context.compaction import (
        CompactionContext,
        ExtractiveSummarizer,
        PruneToolCalls,
        repair_tool_pairs,
        safe_split,
        tool_pair_problems,
    )

    msgs = decode_messages_json(_NEWER_RESULT)
    assert isinstance(msgs[2].content[0], UnknownBlock)
    assert tool_pair_problems(msgs) == []
    assert repair_tool_pairs(msgs) == msgs
    assert safe_split(msgs, 2) == 1  # never between the call and its result
    view = await AutoCompactStore(MemoryContextStore(msgs), None).get_history()
    assert view == msgs
    pruned = await PruneToolCalls(keep_last=0).apply(list(msgs), CompactionContext(max_tokens=10_000))
    assert pruned == [msgs[0], msgs[3]]
    summary = ExtractiveSummarizer().summarize(msgs)
    assert "fetch({}) -> ok, in a form this version cannot read" in summary
    assert "interrupted" not in summary
