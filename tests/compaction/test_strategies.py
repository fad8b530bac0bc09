"""View strategies and pipelines: each strategy's behaviour, and the tool-pair invariant for all."""

from __future__ import annotations

import asyncio
import copy
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axio_context import ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.compaction import (
    CompactionContext,
    CompactionPipeline,
    ExtractiveSummarizer,
    HardTruncation,
    MergeConsecutive,
    PruneToolCalls,
    RepairToolPairs,
    SlidingWindow,
    Strategy,
    Summarization,
    TokenBudget,
    TruncateToolResults,
    context_window_for,
    is_summary_pair,
    is_synthetic_result,
    last_group_start,
    message_chars,
    repair_tool_pairs,
    summary_messages,
    tool_pair_problems,
)
from axio_context.errors import UnknownModelError
from axio_context.testing import text
from axio_context.tokens import estimate_tokens
from tests.compaction.test_pairs import call, results
from tests.support.transcripts import transcripts


def turn(i: int, result_chars: int = 100, parallel: int = 1) -> list[Message]:
    ids = [f"c{i}_{k}" for k in range(parallel)]
    return [
        text("user", f"question {i}"),
        call(*ids, lead=f"looking {i}"),
        Message(
            role="user", content=[ToolResultBlock(tool_use_id=x, content="r" * result_chars) for x in ids]
        ),
        text("assistant", f"answer {i}"),
    ]


def session(turns: int, **kw: int) -> list[Message]:
    return [m for i in range(turns) for m in turn(i, **kw)]


async def run(strategy: Strategy, messages: list[Message], **ctx: object) -> list[Message]:
    return await strategy(messages, CompactionContext(**ctx))  # type: ignore[arg-type]


# --- pipeline and callables ----------------------------------------------------------------------


async def test_empty_pipeline_is_a_no_op() -> None:
    history = [results("orphan"), *session(2)]
    assert await run(CompactionPipeline([]), history) == history


async def test_pipeline_feeds_each_step_into_the_next() -> None:
    seen: list[int] = []

    def record(messages: list[Message]) -> list[Message]:
        seen.append(len(messages))
        return messages

    async def drop_first(messages: list[Message], context: CompactionContext) -> list[Message]:
        assert isinstance(context, CompactionContext)
        return messages[1:]

    pipeline = CompactionPipeline([record, SlidingWindow(6), record, drop_first, record])
    view = await run(pipeline, session(5))
    assert seen == [20, 5, 4]  # the window cut a call off, so its orphaned results went too
    assert tool_pair_problems(view) == []


async def test_plain_callable_output_is_repaired() -> None:
    def cut_badly(messages: list[Message]) -> list[Message]:
        return messages[2:]  # starts with the results of a call it cut off

    view = await run(CompactionPipeline([cut_badly]), session(2))
    assert tool_pair_problems(view) == []
    assert view[0] == text("assistant", "answer 0")


async def test_step_returning_a_non_list_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="returned tuple, not a list"):
        await run(CompactionPipeline([lambda m: tuple(m)]), session(1))
    with pytest.raises(TypeError, match="must be a Strategy, an object with async compact"):
        CompactionPipeline([42])  # type: ignore[list-item]


async def test_strategies_do_not_modify_their_input() -> None:
    history = [
        Message(role="system", content=[TextBlock(text="sys")]),
        *session(6, result_chars=5000),
        call("z"),
    ]
    snapshot = copy.deepcopy(history)
    pipeline = CompactionPipeline(
        [
            TruncateToolResults(100),
            PruneToolCalls(1),
            SlidingWindow(8),
            MergeConsecutive(),
            HardTruncation(max_chars=500),
            Summarization(ExtractiveSummarizer(), max_tokens=10),
        ]
    )
    await run(pipeline, history)
    assert history == snapshot


# --- sliding window --------------------------------------------------------------------------------


async def test_sliding_window_keeps_last_n_and_the_head() -> None:
    system = Message(role="system", content=[TextBlock(text="be brief")])
    history = [system, *summary_messages("earlier"), *session(3)]
    view = await run(SlidingWindow(4), history)
    assert view == [system, *summary_messages("earlier"), *session(3)[-4:]]
    bare = await run(SlidingWindow(4, keep_head=False), history)
    assert bare == session(3)[-4:]


async def test_sliding_window_drops_results_whose_call_fell_out() -> None:
    view = await run(SlidingWindow(2), session(2))
    assert view == [text("assistant", "answer 1")]  # the results message lost its call
    assert await run(SlidingWindow(0), session(1)) == []
    assert await run(SlidingWindow(100), session(2)) == session(2)


# --- tool-result truncation -----------------------------------------------------------------------


async def test_truncate_long_results_with_marker() -> None:
    long_ok = ToolResultBlock(tool_use_id="a", content="x" * 5000)
    long_err = ToolResultBlock(tool_use_id="b", content="e" * 5000, is_error=True)
    short = ToolResultBlock(tool_use_id="c", content="fine")
    nested = ToolResultBlock(tool_use_id="d", content=[TextBlock(text="y" * 3000), TextBlock(text="z" * 100)])
    history = [call("a", "b", "c", "d"), Message(role="user", content=[long_ok, long_err, short, nested])]
    view = await run(TruncateToolResults(1000), history)
    a, b, c, d = view[1].content
    assert isinstance(a, ToolResultBlock) and a.content == "x" * 1000 + "\n[4000 chars truncated]"
    assert b is long_err and c is short
    assert isinstance(d, ToolResultBlock) and isinstance(d.content, list)
    assert [t.text for t in d.content if isinstance(t, TextBlock)] == [
        "y" * 1000 + "\n[2000 chars truncated]",
        "\n[100 chars truncated]",
    ]
    assert view[0] is history[0]


async def test_truncate_spares_the_most_recent_results() -> None:
    history = session(2, result_chars=3000)
    view = await run(TruncateToolResults(10, keep_recent=2), history)
    assert view[2].content[0].content.endswith("[2990 chars truncated]")  # type: ignore[union-attr]
    assert view[6] is history[6]


# --- selective pruning --------------------------------------------------------------------------


async def test_prune_keeps_the_last_k_pairs() -> None:
    history = session(4, parallel=2)
    view = await run(PruneToolCalls(2), history)
    uses = [b.id for m in view for b in m.content if isinstance(b, ToolUseBlock)]
    assert uses == ["c3_0", "c3_1"]
    # pruned assistant messages keep their text; emptied result messages disappear
    assert text("assistant", "looking 0") in view
    assert len(view) == 4 * 4 - 3
    assert tool_pair_problems(view) == []
    # keep_last counts pairs, so parallel calls of one message count one each
    view = await run(PruneToolCalls(3), history)
    assert [b.id for m in view for b in m.content if isinstance(b, ToolUseBlock)] == ["c2_1", "c3_0", "c3_1"]
    assert [b.tool_use_id for m in view for b in m.content if isinstance(b, ToolResultBlock)] == [
        "c2_1",
        "c3_0",
        "c3_1",
    ]
    assert tool_pair_problems(view) == []


async def test_prune_matches_pairs_by_position_when_ids_repeat() -> None:
    def reused_id_turn(i: int) -> list[Message]:  # adapters that call every turn's first call "call_0"
        return [
            text("user", f"q{i}"),
            Message(role="assistant", content=[ToolUseBlock(id="call_0", name="ls", input={"i": i})]),
            Message(role="user", content=[ToolResultBlock(tool_use_id="call_0", content=f"result {i}")]),
            text("assistant", f"a{i}"),
        ]

    history = [*reused_id_turn(1), *reused_id_turn(2), *reused_id_turn(3)]
    view = await run(PruneToolCalls(keep_last=2), history)
    assert [b.input["i"] for m in view for b in m.content if isinstance(b, ToolUseBlock)] == [2, 3]
    assert [b.content for m in view for b in m.content if isinstance(b, ToolResultBlock)] == [
        "result 2",
        "result 3",
    ]
    assert view == [text("user", "q1"), text("assistant", "a1"), *history[4:]]
    assert tool_pair_problems(view) == []


async def test_prune_only_selected_tools() -> None:
    history = [
        text("user", "q"),
        Message(role="assistant", content=[ToolUseBlock("a", "grep", {}), ToolUseBlock("b", "read", {})]),
        results("a", "b"),
        Message(role="assistant", content=[ToolUseBlock("c", "grep", {})]),
        results("c"),
    ]
    view = await run(PruneToolCalls(1, tools={"grep"}), history)
    assert view[1] == Message(role="assistant", content=[ToolUseBlock("b", "read", {})])
    assert view[2] == results("b")
    assert view[3:] == history[3:]


# --- hard truncation -------------------------------------------------------------------------------


async def test_hard_truncation_limits_messages_and_chars() -> None:
    system = Message(role="system", content=[TextBlock(text="s")])
    history = [system, *session(5)]
    view = await run(HardTruncation(max_messages=5), history)
    assert len(view) <= 5 and view[0] is system and view[-1] == history[-1]
    view = await run(HardTruncation(max_chars=300), history)
    assert sum(message_chars(m) for m in view) <= 300
    assert view[-1] == history[-1]
    assert tool_pair_problems(view) == []


async def test_hard_truncation_keeps_the_last_message_however_long() -> None:
    history = [text("user", "a"), text("user", "b" * 1000)]
    assert await run(HardTruncation(max_chars=10), history) == [history[1]]
    with pytest.raises(ValueError, match="max_messages, max_chars, max_tokens or several"):
        HardTruncation()


def ls_exchange() -> list[Message]:
    return [
        Message(role="system", content=[TextBlock(text="You are terse.")]),
        text("user", "list the files"),
        Message(role="assistant", content=[ToolUseBlock(id="c1", name="ls", input={"path": "."})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="c1", content="a.py\nb.py")]),
    ]


async def test_cuts_keep_the_last_result_with_its_call() -> None:
    system, _, use, result = history = ls_exchange()
    for strategy in (
        HardTruncation(max_messages=2),
        HardTruncation(max_messages=1),
        HardTruncation(max_chars=15),
    ):
        assert await run(strategy, history) == [use, result], strategy
    assert await run(HardTruncation(max_messages=3), history) == [system, use, result]
    assert await run(SlidingWindow(1), history) == [system, use, result]
    assert await run(SlidingWindow(1, keep_head=False), history) == [use, result]
    assert await run(SlidingWindow(0), history) == [system]  # asked for the head only


async def test_hard_truncation_of_a_view_that_is_all_head_keeps_its_last_message() -> None:
    system = Message(role="system", content=[TextBlock(text="s" * 50)])
    history = [system, *summary_messages("x" * 100)]
    assert await run(HardTruncation(max_messages=1), history) == [history[-1]]


@pytest.mark.parametrize(
    "strategy",
    [HardTruncation(max_messages=1), HardTruncation(max_chars=0), SlidingWindow(1), SlidingWindow(2)],
    ids=repr,
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=transcripts())
def test_cuts_never_lose_the_last_message(history: list[Message], strategy: Strategy) -> None:
    repaired = repair_tool_pairs(history)
    view = asyncio.run(run(strategy, history))
    assert tool_pair_problems(view) == []
    if repaired:
        assert view and view[-1] == repaired[-1]


# --- merge -------------------------------------------------------------------------------------------


async def test_merge_consecutive_same_role() -> None:
    history = [
        text("user", "a"),
        text("user", "b"),
        text("assistant", "c"),
        text("assistant", "d"),
        text("user", "e"),
    ]
    view = await run(MergeConsecutive(), history)
    assert [m.role for m in view] == ["user", "assistant", "user"]
    assert [[b.text for b in m.content if isinstance(b, TextBlock)] for m in view] == [
        ["a", "b"],
        ["c", "d"],
        ["e"],
    ]


async def test_merge_after_pruning_makes_turns_alternate() -> None:
    view = await run(CompactionPipeline([PruneToolCalls(0), MergeConsecutive()]), session(3))
    roles = [m.role for m in view]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert not any(isinstance(b, ToolUseBlock | ToolResultBlock) for m in view for b in m.content)


async def test_repair_strategy_adds_synthetic_results() -> None:
    view = await run(RepairToolPairs(), [call("a"), text("user", "hello")])
    assert is_synthetic_result(view[1].content[0])


# --- token budget ------------------------------------------------------------------------------------


class Counting(Strategy):
    def __init__(self, inner: Strategy) -> None:
        self.inner = inner
        self.calls = 0

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        self.calls += 1
        assert context.max_tokens is not None
        return await self.inner.apply(messages, context)


async def test_token_budget_stops_once_the_view_fits() -> None:
    history = session(10, result_chars=4000)
    total = estimate_tokens(history)
    truncate, window, backstop = (
        Counting(TruncateToolResults(200)),
        Counting(SlidingWindow(4)),
        Counting(HardTruncation(max_messages=1)),
    )
    budget = TokenBudget(total // 2, [truncate, window, backstop])
    view = await run(budget, history)
    assert (truncate.calls, window.calls, backstop.calls) == (1, 0, 0)
    assert estimate_tokens(view) <= total // 2
    assert len(view) == len(history)

    untouched = await run(TokenBudget(total + 1, [truncate]), history)
    assert untouched == history and truncate.calls == 1


async def test_token_budget_from_model() -> None:
    budget = TokenBudget.from_model("gpt-4o-2024-08-06", [SlidingWindow(10)])
    assert budget.max_tokens == int(128_000 * 0.8)
    assert (
        TokenBudget.from_model("anthropic/claude-3-5-sonnet-20241022", [], trigger_ratio=0.5).max_tokens
        == 100_000
    )
    assert TokenBudget.from_model("llama3.1:8b", []).max_tokens == int(131_072 * 0.8)
    assert TokenBudget.from_model("my-model", [], context_window=10_000).max_tokens == 8_000
    with pytest.raises(UnknownModelError, match="'my-model'"):
        TokenBudget.from_model("my-model", [])
    assert context_window_for("gpt-4") == 8_192
    assert context_window_for("gpt-4.1-mini-2025-04-14") == 1_047_576
    assert context_window_for("gpt-4.5-preview", 1) == 1


class PerMessage:
    """A counter that charges every message the same, unlike the default estimate."""

    def count(self, message: Message) -> int:
        return 100


async def test_token_budget_ending_with_hard_truncation_is_a_guarantee() -> None:
    history = [text("user" if i % 2 == 0 else "assistant", "x" * 12_000) for i in range(60)]
    budget = TokenBudget.from_model("gpt-4o", [HardTruncation(max_messages=50)])
    view = await run(budget, history)
    assert estimate_tokens(view) <= budget.max_tokens < estimate_tokens(history[-50:])
    assert view == history[-len(view) :] and len(view) == budget.max_tokens // estimate_tokens(history[:1])

    # Images have no characters but cost tokens: the budget counts them.
    png = ImageBlock(media_type="image/png", data=b"\x89PNG" + bytes(64))
    pictures = [Message(role="user", content=[TextBlock(text=f"look {i}"), png]) for i in range(20)]
    view = await run(TokenBudget(5_000, [HardTruncation(max_chars=1_000_000)]), pictures)
    assert view == pictures[-3:] and estimate_tokens(view) <= 5_000

    # The budget's own counter is the one HardTruncation counts with.
    view = await run(TokenBudget(1_000, [HardTruncation(max_messages=50)], counter=PerMessage()), history)
    assert len(view) == 10

    # A limit of its own, outside any budget, the smaller of the two inside one.
    assert await run(HardTruncation(max_tokens=7_000), history) == history[-2:]
    assert await run(TokenBudget(7_000, [HardTruncation(max_tokens=4_000)]), history) == history[-1:]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=transcripts(), limit=st.integers(min_value=1, max_value=3_000))
def test_hard_truncation_fits_any_budget_but_the_last_exchange(history: list[Message], limit: int) -> None:
    view = asyncio.run(run(TokenBudget(limit, [HardTruncation(max_messages=1_000)]), history))
    assert tool_pair_problems(view) == []
    repaired = repair_tool_pairs(history)
    if estimate_tokens(view) > limit:  # only when the last exchange alone is over the budget
        assert view == repaired[last_group_start(repaired) :]


# --- summarization -----------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.inputs: list[list[Message]] = []
        self.name = "recorder"

    async def __call__(self, messages: list[Message], system_prompt: str, /) -> str:
        self.inputs.append(messages)
        return f"summary #{len(self.inputs)} of {len(messages)} messages"


async def test_summarization_splits_by_tokens_and_keeps_recent() -> None:
    history = session(10, result_chars=400)
    limit = estimate_tokens(history) // 2
    recorder = Recorder()
    view = await run(Summarization(recorder, max_tokens=limit), history)
    assert is_summary_pair(view)
    kept = view[2:]
    assert kept == history[len(history) - len(kept) :]
    assert estimate_tokens(kept) <= int(limit * 0.4) + estimate_tokens([history[-1]])
    assert recorder.inputs == [history[: len(history) - len(kept)]]
    assert tool_pair_problems(view) == []


async def test_summarization_below_limit_does_nothing() -> None:
    recorder = Recorder()
    history = session(3)
    assert await run(Summarization(recorder, max_tokens=10**6), history) == history
    assert recorder.inputs == []


async def test_summarization_uses_the_budget_from_context_and_keeps_system() -> None:
    system = Message(role="system", content=[TextBlock(text="rules")])
    history = [system, *session(8, result_chars=400)]
    recorder = Recorder()
    view = await run(Summarization(recorder), history, max_tokens=estimate_tokens(history) // 3)
    assert view[0] is system and is_summary_pair(view, 1)
    assert recorder.inputs[0][0] == history[1]


async def test_summarization_updates_an_existing_summary() -> None:
    recorder = Recorder()
    strategy = Summarization(recorder, max_tokens=1)
    history = session(6)
    first = await run(strategy, history)
    assert first[0].text == "summary #1 of 23 messages"
    # The same prefix again: the remembered summary, no new call.
    assert await run(strategy, history) == first
    assert len(recorder.inputs) == 1
    # The session grew: only the new messages go out, after the previous summary.
    grown = [*history, *turn(6)]
    second = await run(strategy, grown)
    assert len(recorder.inputs) == 2
    sent = recorder.inputs[1]
    assert is_summary_pair(sent) and sent[0].text == "summary #1 of 23 messages"
    assert sent[2:] == grown[23 : len(grown) - len(second) + 2]
    assert second[0].text.startswith("summary #2")
    # A view that already opens with a summary (a checkpointed store) has it updated, not stacked.
    checkpointed = [*summary_messages("stored summary"), *session(3)]
    third = await run(Summarization(recorder, max_tokens=1), checkpointed)
    assert recorder.inputs[-1][0].text == "stored summary"
    assert sum(is_summary_pair(third, i) for i in range(len(third))) == 1


async def test_summarization_failure_leaves_the_view(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(messages: list[Message], system_prompt: str, /) -> str:
        raise RuntimeError("model down")

    history = session(4)
    view = await run(Summarization(broken, max_tokens=1), history)
    assert view == history
    assert "Context compaction failed" in caplog.text


# --- the invariant, for every strategy and pipeline --------------------------------------------------


def every_strategy() -> list[Strategy]:
    return [
        SlidingWindow(3),
        SlidingWindow(1, keep_head=False),
        TruncateToolResults(50),
        PruneToolCalls(1),
        PruneToolCalls(0, tools={"grep"}),
        HardTruncation(max_messages=4),
        HardTruncation(max_chars=400),
        MergeConsecutive(),
        RepairToolPairs(),
        Summarization(ExtractiveSummarizer(), max_tokens=200, keep_ratio=0.3),
        TokenBudget(300, [TruncateToolResults(100), SlidingWindow(6), HardTruncation(max_messages=3)]),
        CompactionPipeline([lambda m: m[len(m) // 2 :]]),
    ]


@pytest.mark.parametrize("which", range(len(every_strategy())), ids=[repr(s) for s in every_strategy()])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=transcripts())
def test_every_strategy_emits_valid_views(history: list[Message], which: int) -> None:
    view = asyncio.run(run(every_strategy()[which], history))
    assert tool_pair_problems(view) == [], view


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(), st.lists(st.integers(min_value=0, max_value=len(every_strategy()) - 1), max_size=5))
def test_every_pipeline_emits_valid_views(history: list[Message], picks: list[int]) -> None:
    strategies = every_strategy()
    pipeline = CompactionPipeline([strategies[i] for i in picks])
    view = asyncio.run(run(pipeline, history))
    if picks:
        assert tool_pair_problems(view) == []
    else:
        assert view == history
