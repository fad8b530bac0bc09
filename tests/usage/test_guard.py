"""UsageGuard: the pre-flight check with the estimator and with an async counter, tool calls,
and a scope by agent; against the in-memory recorder (the SQLite one runs the same contract)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from axio_context.tokens import estimate_tokens
from axio_context.usage_limits import (
    MemoryUsageRecorder,
    RequestUsage,
    UsageError,
    UsageGuard,
    UsageLimitExceeded,
    UsageLimits,
)

PROMPT = [Message(role="user", content=[TextBlock(text="word " * 200)])]


async def test_preflight_with_the_default_estimator() -> None:
    recorder = MemoryUsageRecorder()
    estimated = estimate_tokens(PROMPT)
    guard = UsageGuard(
        recorder,
        UsageLimits(per_request_input_tokens_limit=estimated, count_tokens_before_request=True),
        session_id="s",
    )
    assert await guard.count_prompt(PROMPT) == estimated
    await guard.check_before_request(prompt=PROMPT)  # exactly at the limit: allowed
    tight = UsageGuard(
        recorder,
        UsageLimits(per_request_input_tokens_limit=estimated - 1, count_tokens_before_request=True),
        session_id="s",
    )
    with pytest.raises(UsageLimitExceeded, match="per_request_input_tokens_limit") as info:
        await tight.check_before_request(prompt=PROMPT)
    assert info.value.value == estimated and info.value.scope == "session 's'"


async def test_preflight_with_an_async_counter_and_recorded_usage() -> None:
    calls: list[int] = []

    async def provider_count(messages: Sequence[Message]) -> int:
        calls.append(len(messages))
        return 500

    recorder = MemoryUsageRecorder()
    guard = UsageGuard(
        recorder,
        UsageLimits(input_tokens_limit=1000, count_tokens_before_request=True),
        agent="coder",
        counter=provider_count,
    )
    await guard.check_before_request(prompt=PROMPT)
    await recorder.record(RequestUsage(input_tokens=400), session_id="a", agent="coder")
    await recorder.record(RequestUsage(input_tokens=400), session_id="b", agent="other")  # not this agent's
    await guard.check_before_request(prompt=PROMPT)  # 400 + 500 <= 1000
    await recorder.record(RequestUsage(input_tokens=101), session_id="b2", agent="coder")
    with pytest.raises(
        UsageLimitExceeded, match=r"input_tokens=501 \+ prompt_tokens=500\) for agent 'coder'"
    ):
        await guard.check_before_request(prompt=PROMPT)
    assert calls == [1, 1, 1]


async def test_an_async_counter_giving_nonsense_is_refused() -> None:
    async def broken(messages: Sequence[Message]) -> int:
        return -3

    guard = UsageGuard(
        MemoryUsageRecorder(), UsageLimits(count_tokens_before_request=True), run="r", counter=broken
    )
    with pytest.raises(UsageError, match="prompt_tokens"):
        await guard.check_before_request(prompt=PROMPT)


async def test_tool_calls_are_projected_before_the_call() -> None:
    recorder = MemoryUsageRecorder()
    guard = UsageGuard(recorder, UsageLimits(tool_calls_limit=3), session_id="s")
    await recorder.record(RequestUsage(), session_id="s", tool_calls=2)
    await guard.check_before_tool_call()
    with pytest.raises(UsageLimitExceeded, match=r"tool_calls_limit of 3 \(tool_calls=4"):
        await guard.check_before_tool_call(2)


async def test_a_guard_needs_a_scope_and_limits() -> None:
    with pytest.raises(UsageError, match="scope"):
        UsageGuard(MemoryUsageRecorder(), UsageLimits())
    with pytest.raises(UsageError, match="UsageLimits"):
        UsageGuard(MemoryUsageRecorder(), {"request_limit": 1}, session_id="s")  # type: ignore[arg-type]
