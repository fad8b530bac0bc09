"""Code written for pydantic-ai 2.68 runs unchanged (issue 35, items 9-12), against pydantic-ai's
own objects: ``RequestUsage.extract``, ``count_tokens_before_request``, history processors that
take the run context first, ``request_limit=0`` and ``except UsageLimitExceeded``."""

from __future__ import annotations

import pickle
import subprocess
import sys
from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai import exceptions as pai_exceptions
from pydantic_ai import messages as pm
from pydantic_ai import usage as pai
from pydantic_ai.models.function import AgentInfo, FunctionModel

from axio_context import Message
from axio_context.compaction import CompactionContext, CompactionPipeline, SlidingWindow
from axio_context.testing import text
from axio_context.usage_limits import (
    MemoryUsageRecorder,
    RequestUsage,
    RunUsage,
    UsageGuard,
    UsageLimitExceeded,
    UsageLimits,
)
from axio_context.usage_limits.pydantic_bridge import to_pydantic_ai
from axio_context_pydantic_ai import compact_history

CHAT_RESPONSE: dict[str, Any] = {
    "model": "gpt-4o",
    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 30}},
}
OPENAI = {"provider": "openai", "provider_url": "https://api.openai.com/v1", "provider_fallback": "openai"}


# --- 9. RequestUsage.extract ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        CHAT_RESPONSE,
        {**CHAT_RESPONSE, "usage": {**CHAT_RESPONSE["usage"], "logfire_ai_gateway": {"cost": "0.0038"}}},
    ],
)
def test_extract_reads_a_response_as_pydantic_ai_does(data: dict[str, Any]) -> None:
    ours = RequestUsage.extract(data, **OPENAI, api_flavor="chat", details={"note": 1})
    theirs = pai.RequestUsage.extract(data, **OPENAI, api_flavor="chat", details={"note": 1})
    assert to_pydantic_ai(ours) == theirs
    assert (ours.input_tokens, ours.cache_read_tokens, ours.output_tokens) == (100, 30, 20)


def test_extract_of_an_unknown_provider_is_empty_usage() -> None:
    ours = RequestUsage.extract({}, provider="nobody", provider_url="", provider_fallback="nobody")
    theirs = pai.RequestUsage.extract({}, provider="nobody", provider_url="", provider_fallback="nobody")
    assert to_pydantic_ai(ours) == theirs and not ours.has_values()


# --- 10. count_tokens_before_request ------------------------------------------------------------

PROMPT = [text("user", "word " * 200)]


async def test_the_prompt_is_counted_only_when_asked() -> None:
    recorder = MemoryUsageRecorder()
    off = UsageGuard(recorder, UsageLimits(input_tokens_limit=10), session_id="s")
    await off.check_before_request(prompt=PROMPT)  # pydantic-ai's default: not counted, not refused
    on = UsageGuard(
        recorder, UsageLimits(input_tokens_limit=10, count_tokens_before_request=True), session_id="s"
    )
    with pytest.raises(UsageLimitExceeded, match="input_tokens_limit of 10"):
        await on.check_before_request(prompt=PROMPT)


# --- 11. history processors that take the run context first ----------------------------------


async def test_a_context_first_processor_runs_in_compact_history() -> None:
    contexts: list[object] = []

    def drop_old_requests(ctx: RunContext[None], messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
        contexts.append(ctx)
        return messages[-3:]

    async def also_async(ctx, messages):  # type: ignore[no-untyped-def]  # pydantic-ai's short form
        contexts.append(ctx)
        return messages

    seen: list[int] = []

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        seen.append(len(messages))
        return pm.ModelResponse(parts=[pm.TextPart("ok")])

    agent: Agent[None, str] = Agent(
        FunctionModel(model), capabilities=[compact_history(SlidingWindow(5), drop_old_requests, also_async)]
    )
    history: list[pm.ModelMessage] = []
    for i in range(4):
        history = (await agent.run(f"question {i}", message_history=history)).all_messages()
    assert seen == [1, 3, 3, 3]
    assert contexts and all(isinstance(c, RunContext) for c in contexts)


async def test_a_context_first_step_in_our_pipeline_gets_the_context_first() -> None:
    got: list[tuple[str, str]] = []

    def proc(ctx, messages):  # type: ignore[no-untyped-def]
        got.append((type(ctx).__name__, type(messages).__name__))
        return messages[-1:]

    raw: list[Message] = [text("user", "a"), text("assistant", "b")]
    assert await CompactionPipeline([proc]).compact(raw) == raw[-1:]
    assert got == [(CompactionContext.__name__, "list")]


# --- 12. request_limit=0 and pydantic-ai's except clauses ----------------------------------------


def test_a_request_limit_of_zero_allows_no_request() -> None:
    ours, theirs = UsageLimits(request_limit=0), pai.UsageLimits(request_limit=0)
    with pytest.raises(pai_exceptions.UsageLimitExceeded):
        theirs.check_before_request(pai.RunUsage())
    with pytest.raises(pai_exceptions.UsageLimitExceeded, match="request_limit of 0"):
        ours.check_before_request(RunUsage())


def test_pydantic_ais_except_clause_catches_ours() -> None:
    assert issubclass(UsageLimitExceeded, pai_exceptions.UsageLimitExceeded)
    assert issubclass(UsageLimitExceeded, pai_exceptions.AgentRunError)
    caught: pai_exceptions.UsageLimitExceeded | None = None
    try:  # pydantic-ai code's own clause
        UsageLimits(total_tokens_limit=5).check_tokens(RunUsage(input_tokens=9))
    except pai_exceptions.UsageLimitExceeded as exc:
        caught = exc
    assert isinstance(caught, UsageLimitExceeded) and caught.limit == 5
    assert caught.message == str(caught) == "Exceeded the total_tokens_limit of 5 (total_tokens=9)"
    assert str(pickle.loads(pickle.dumps(caught))) == str(caught)
    assert UsageLimits(cost_limit=Decimal(0)).cost_limit == 0


def test_the_core_does_not_import_pydantic_ai() -> None:
    code = (
        "import sys, axio_context, axio_context.usage_limits, axio_context.state;"
        "from axio_context.usage_limits import UsageLimits, LimitExceeded;"
        "assert 'pydantic_ai' not in sys.modules, 'imported';"
        "from axio_context.usage_limits import UsageLimitExceeded;"
        "import pydantic_ai.exceptions as e; assert issubclass(UsageLimitExceeded, e.UsageLimitExceeded)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
