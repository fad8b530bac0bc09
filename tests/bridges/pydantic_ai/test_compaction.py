"""Our compaction as a pydantic-ai history capability: strategies run over pydantic-ai messages,
and no view splits a tool call from its return."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel

from axio_context.compaction import PruneToolCalls, SlidingWindow, Summarization, TruncateToolResults
from axio_context_pydantic_ai import compact_history, history_processor


def pair_problems(messages: list[pm.ModelMessage]) -> list[str]:
    """Tool returns with no call before them, and calls (but in the last response) with no return."""
    called: dict[str, int] = {}
    returned: set[str] = set()
    problems = []
    for i, m in enumerate(messages):
        for p in m.parts:
            if isinstance(p, pm.ToolCallPart):
                called[p.tool_call_id] = i
            elif isinstance(p, pm.ToolReturnPart):
                if p.tool_call_id not in called:
                    problems.append(f"return {p.tool_call_id} at {i} has no call")
                returned.add(p.tool_call_id)
    last = max((i for i, m in enumerate(messages) if isinstance(m, pm.ModelResponse)), default=-1)
    problems += [f"call {c} has no return" for c, i in called.items() if c not in returned and i != last]
    return problems


def tool_history(turns: int) -> list[pm.ModelMessage]:
    out: list[pm.ModelMessage] = []
    for t in range(turns):
        out.append(pm.ModelRequest(parts=[pm.UserPromptPart(f"turn {t}: look up two things")]))
        out.append(
            pm.ModelResponse(
                parts=[
                    pm.TextPart("looking"),
                    pm.ToolCallPart("lookup", {"q": f"a{t}"}, f"a{t}"),
                    pm.ToolCallPart("lookup", {"q": f"b{t}"}, f"b{t}"),
                ]
            )
        )
        out.append(
            pm.ModelRequest(
                parts=[
                    pm.ToolReturnPart("lookup", "result " * 50 + str(t), f"a{t}"),
                    pm.ToolReturnPart("lookup", {"value": t}, f"b{t}"),
                ]
            )
        )
        out.append(pm.ModelResponse(parts=[pm.TextPart(f"done {t}")]))
    out.append(pm.ModelRequest(parts=[pm.UserPromptPart("and now?")]))
    return out


@pytest.mark.parametrize("keep", range(1, 12))
async def test_sliding_window_never_splits_a_pair(keep: int) -> None:
    history = tool_history(4)
    view = await history_processor(SlidingWindow(keep))(history)
    assert pair_problems(view) == []
    assert view[-1] is history[-1]
    assert len(view) <= keep + 1
    # A message the strategy kept as it was is the very pydantic-ai message it came from.
    assert all(any(m is h for h in history) for m in view)


async def test_changed_messages_are_rebuilt_and_summaries_added() -> None:
    history = tool_history(6)
    view = await history_processor(TruncateToolResults(max_chars=40), Summarization(max_tokens=300))(history)
    assert pair_problems(view) == []
    assert len(view) < len(history)
    texts = [
        p.content for m in view for p in m.parts if isinstance(p, pm.UserPromptPart | pm.SystemPromptPart)
    ]
    assert any("turn 0" in str(t) for t in texts)  # the summary keeps the first goal
    returns = [p for m in view for p in m.parts if isinstance(p, pm.ToolReturnPart)]
    assert returns and all(p.tool_name == "lookup" for p in returns)
    assert all(len(str(p.content)) < 200 for p in returns)  # truncated, in pydantic-ai's terms
    pruned = await history_processor(PruneToolCalls(keep_last=1))(history)
    assert pair_problems(pruned) == []
    assert len(pruned) < len(history) or any(m is not h for m, h in zip(pruned, history, strict=False))


async def test_an_agent_with_the_capability_sees_a_window_with_whole_pairs() -> None:
    seen: list[list[pm.ModelMessage]] = []

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        seen.append(list(messages))
        last = messages[-1]
        if not any(isinstance(p, pm.ToolReturnPart) for p in last.parts):
            n = len(seen)
            return pm.ModelResponse(parts=[pm.ToolCallPart("lookup", {"q": str(n)}, f"c{n}")])
        return pm.ModelResponse(parts=[pm.TextPart("ok")])

    agent: Agent[None, str] = Agent(FunctionModel(model), capabilities=[compact_history(SlidingWindow(4))])

    @agent.tool_plain
    def lookup(q: str) -> str:
        return f"found {q}"

    history: list[pm.ModelMessage] = []
    for i in range(5):
        result = await agent.run(f"question {i}", message_history=history)
        history = result.all_messages()
    assert len(history) < 20  # the capability compacted what the run keeps, too
    for messages in seen:
        assert pair_problems(messages) == []
        assert len(messages) <= 5
    assert any(len(m) >= 4 for m in seen)


def test_no_steps_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one step"):
        history_processor()
