"""ravi's names: compaction aliases with ravi's defaults, ContextConfig and AgentContext checks."""

from __future__ import annotations

import copy

import pytest

from axio_context import Message
from axio_context.agents import (
    AgentContext,
    CompactionPipeline,
    CompactionStrategy,
    ContextConfig,
    HistoryRetention,
    InMemoryHistoryProvider,
    SelectiveToolCallCompactionStrategy,
    SlidingWindowCompaction,
    SummarizationCompaction,
    TokenBudgetComposedStrategy,
    ToolResultCompactionStrategy,
    TruncationStrategy,
)
from axio_context.blocks import ToolResultBlock, ToolUseBlock
from axio_context.compaction import HardTruncation, PruneToolCalls, TokenBudget, TruncateToolResults
from axio_context.testing import text
from tests.compaction.test_strategies import session


def _calls(view: list[Message]) -> int:
    return sum(isinstance(b, ToolUseBlock) for m in view for b in m.content)


def test_ravis_defaults() -> None:
    assert SlidingWindowCompaction().max_messages == 100
    assert ToolResultCompactionStrategy().max_chars == 500
    assert SelectiveToolCallCompactionStrategy().keep_recent_groups == 5
    assert TruncationStrategy().max_messages == 100
    budget = TokenBudgetComposedStrategy.from_model("gpt-4o", [TruncationStrategy(10)])
    assert budget.token_budget == int(TokenBudget.from_model("gpt-4o", []).max_tokens)
    assert isinstance(budget, TokenBudget) and isinstance(budget, CompactionStrategy)


async def test_each_alias_is_our_strategy_with_compact() -> None:
    raw = session(30, result_chars=2_000, parallel=2)
    kept = copy.deepcopy(raw)
    assert await ToolResultCompactionStrategy(500).compact(raw) == await TruncateToolResults(500)(raw)
    assert await TruncationStrategy(10, 5_000).compact(raw) == await HardTruncation(
        max_messages=10, max_chars=5_000
    )(raw)
    window = await SlidingWindowCompaction(max_messages=9).compact(raw)
    assert len(window) <= 9 and window[-1] == raw[-1]
    assert raw == kept  # no alias changes what it is given


async def test_selective_tool_calls_count_groups() -> None:
    raw = session(10, parallel=3)  # ten assistant messages, each with three calls
    view = await SelectiveToolCallCompactionStrategy(keep_recent_groups=2).compact(raw)
    assert _calls(view) == 6
    assert await SelectiveToolCallCompactionStrategy(2).compact(raw) == await PruneToolCalls(6)(raw)
    results = [b for m in view for b in m.content if isinstance(b, ToolResultBlock)]
    assert len(results) == 6
    assert _calls(await SelectiveToolCallCompactionStrategy(0).compact(raw)) == 0


async def test_summarization_keeps_the_recent_budget_and_waits_for_enough_old_tokens() -> None:
    async def summarize(messages: list[Message], system_prompt: str, /) -> str:
        return f"summary of {len(messages)}"

    raw = [text("system", "be brief"), *[text("user", "x" * 400) for _ in range(20)]]  # ~100 tokens each
    view = await SummarizationCompaction(summarize, recent_token_budget=350, min_old_tokens=100).compact(raw)
    assert view[0] == raw[0] and view[1] == text("user", "summary of 17")
    assert view[3:] == raw[-3:]
    untouched = await SummarizationCompaction(
        summarize, recent_token_budget=350, min_old_tokens=10**6
    ).compact(raw)
    assert untouched == raw


async def test_a_strategy_written_ravis_way_fits_every_pipeline() -> None:
    class LastTwo(CompactionStrategy):
        async def compact(self, raw: list[Message]) -> list[Message]:  # type: ignore[override]
            return list(raw[-2:])

    raw = [text("user", str(i)) for i in range(5)]
    assert await CompactionPipeline([LastTwo(), TruncationStrategy(1)]).compact(raw) == raw[-1:]
    ctx = AgentContext(ContextConfig.default(LastTwo()), "a")
    await ctx.append_many("s", raw)
    assert await ctx.get_prompt_window("s") == raw[-2:]

    class Neither(CompactionStrategy):
        pass

    with pytest.raises(TypeError, match="Neither must override compact"):
        await Neither().compact(raw)


def test_bad_configuration_is_refused_naming_the_field() -> None:
    with pytest.raises(TypeError, match="history must be a HistoryProvider"):
        ContextConfig(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pipeline"):
        ContextConfig(InMemoryHistoryProvider(), 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="retention"):
        ContextConfig(InMemoryHistoryProvider(), retention="run")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="agent_id"):
        AgentContext(ContextConfig.default(), None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_messages"):
        SlidingWindowCompaction(0)
    with pytest.raises(ValueError, match="run_id must not be empty"):
        AgentContext(ContextConfig.default(), "a").run("s", run_id="")


async def test_none_retention_never_writes() -> None:
    provider = InMemoryHistoryProvider()
    ctx = AgentContext(ContextConfig(provider, retention=HistoryRetention.NONE), "a")
    await ctx.append("s", text("user", "x"))
    async with ctx.run("s") as run:
        await run.append(text("user", "y"))
    assert await provider.count_messages("a", session_id="s") == 0
