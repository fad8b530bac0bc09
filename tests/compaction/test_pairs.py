"""The tool-pair rule: validation, repair of interrupted calls and orphan results, safe splits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context import Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.compaction import (
    INTERRUPTED_RESULT_TEXT,
    is_synthetic_result,
    repair_tool_pairs,
    safe_split,
    tool_pair_problems,
)
from axio_context.testing import text
from tests.support.transcripts import transcripts


def call(*ids: str, lead: str | None = None) -> Message:
    content: list = [TextBlock(text=lead)] if lead else []
    return Message(
        role="assistant", content=[*content, *(ToolUseBlock(id=i, name="t", input={}) for i in ids)]
    )


def results(*ids: str, extra: str | None = None) -> Message:
    content: list = [ToolResultBlock(tool_use_id=i, content=f"out {i}") for i in ids]
    if extra:
        content.append(TextBlock(text=extra))
    return Message(role="user", content=content)


def test_valid_parallel_calls_have_no_problems_and_pass_through_unchanged() -> None:
    view = [text("user", "go"), call("a", "b", "c"), results("c", "a", "b"), text("assistant", "done")]
    assert tool_pair_problems(view) == []
    repaired = repair_tool_pairs(view)
    assert repaired == view
    assert all(x is y for x, y in zip(repaired, view, strict=True))


def test_final_call_awaiting_results_is_allowed() -> None:
    view = [text("user", "go"), call("a", "b")]
    assert tool_pair_problems(view) == []
    assert repair_tool_pairs(view) == view


def test_problems_are_described() -> None:
    view = [results("x"), call("a", "b"), results("a"), call("c"), text("assistant", "hm")]
    problems = tool_pair_problems(view)
    assert "message 0: tool_result 'x' has no tool_use in the message before" in problems
    assert "message 1: tool_use 'b' has no tool_result in the next message" in problems
    assert "message 3: tool_use 'c' has no tool_result in the next message" in problems
    assert len(problems) == 3


def test_interrupted_call_followed_by_user_text_gets_synthetic_result_first() -> None:
    crashed = call("a", "b", lead="running two tools")
    view = [text("user", "go"), crashed, text("user", "hello again?")]
    repaired = repair_tool_pairs(view)
    assert tool_pair_problems(repaired) == []
    assert repaired[1] is crashed
    fixed = repaired[2]
    assert [type(b) for b in fixed.content] == [ToolResultBlock, ToolResultBlock, TextBlock]
    for block, cid in zip(fixed.content[:2], ("a", "b"), strict=True):
        assert isinstance(block, ToolResultBlock)
        assert block.tool_use_id == cid and block.is_error and block.content == INTERRUPTED_RESULT_TEXT
        assert is_synthetic_result(block)
    assert fixed.text == "hello again?"
    # the input is not modified
    assert view[2] == text("user", "hello again?")


def test_interrupted_call_followed_by_assistant_gets_a_synthetic_user_message() -> None:
    view = [call("a"), text("assistant", "retrying"), text("user", "ok")]
    repaired = repair_tool_pairs(view)
    assert [m.role for m in repaired] == ["assistant", "user", "assistant", "user"]
    assert is_synthetic_result(repaired[1].content[0])
    assert tool_pair_problems(repaired) == []


def test_partial_results_are_completed_after_the_real_ones() -> None:
    view = [call("a", "b", "c"), results("b", extra="note"), text("assistant", "x")]
    repaired = repair_tool_pairs(view)
    content = repaired[1].content
    assert [b.tool_use_id for b in content if isinstance(b, ToolResultBlock)] == ["b", "a", "c"]
    assert not is_synthetic_result(content[0]) and is_synthetic_result(content[1])
    assert isinstance(content[-1], TextBlock)
    assert tool_pair_problems(repaired) == []


def test_orphan_results_are_dropped_or_kept() -> None:
    view = [
        results("gone"),
        text("user", "q"),
        results("gone2", extra="keep me"),
        call("a"),
        results("a", "zz"),
    ]
    repaired = repair_tool_pairs(view)
    assert tool_pair_problems(repaired) == []
    assert repaired == [text("user", "q"), text("user", "keep me"), call("a"), results("a")]
    assert repair_tool_pairs(view, drop_orphans=False) == view


def test_empty_message_is_kept() -> None:
    view = [Message(role="user", content=[])]
    assert repair_tool_pairs(view) == view


@settings(max_examples=300, deadline=None)
@given(transcripts())
def test_repair_always_yields_a_valid_view_and_is_idempotent(history: list[Message]) -> None:
    repaired = repair_tool_pairs(history)
    assert tool_pair_problems(repaired) == []
    assert repair_tool_pairs(repaired) == repaired
    # nothing but synthetic results is added, and real results are never lost when their call is present
    real = [b for m in repaired for b in m.content if not is_synthetic_result(b)]
    original = [b for m in history for b in m.content]
    assert all(any(b is o for o in original) for b in real)


@settings(max_examples=300, deadline=None)
@given(transcripts(), st.integers(min_value=0, max_value=40))
def test_safe_split_never_separates_a_pair(history: list[Message], keep: int) -> None:
    split = safe_split(history, len(history) - keep)
    assert 0 <= split <= max(0, len(history) - keep)
    before_uses = {
        b.id
        for m in history[:split]
        if m.role == "assistant"
        for b in m.content
        if isinstance(b, ToolUseBlock)
    }
    after_results = {
        b.tool_use_id for m in history[split:] for b in m.content if isinstance(b, ToolResultBlock)
    }
    assert not before_uses & after_results
    if (
        history
        and history[-1].role == "assistant"
        and any(isinstance(b, ToolUseBlock) for b in history[-1].content)
    ):
        assert split < len(history)  # a call awaiting results stays in the recent part


def test_safe_split_moves_back_over_parallel_results() -> None:
    history = [text("user", "q"), call("a", "b"), results("a", "b"), text("assistant", "done")]
    assert safe_split(history, 2) == 1
    assert safe_split(history, 3) == 3
    assert safe_split(history, 1) == 1
    assert safe_split(history, 4) == 4
    assert safe_split([text("user", "q"), call("a")], 2) == 1
    assert safe_split(history, 2, lower=2) == 2
