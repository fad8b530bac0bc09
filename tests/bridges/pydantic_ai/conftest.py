"""The pydantic-ai bridge's tests: a real Agent on FunctionModel (no network), a fresh database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel

from axio_context_sqlite import Connection, connect


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[Connection]:
    async with connect(tmp_path / "t.db") as c:
        yield c


def weather_model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
    """Calls ``weather`` for Paris (the tool asks for a retry), then for Lyon with string args,
    then answers: a run with a tool, a retry and every kind of part we keep."""
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, pm.ToolReturnPart)]
    if not returns:
        return pm.ModelResponse(
            parts=[
                pm.ThinkingPart(
                    "the user wants weather",
                    signature="sig-1",
                    provider_name="anthropic",
                    provider_details={"budget": 1024, "ratio": 0.5},
                ),
                pm.ToolCallPart("weather", {"city": "Paris"}, "call-1"),
            ],
            usage=pm.RequestUsage(input_tokens=12, output_tokens=7),
            model_name="fn-model",
            provider_name="function",
            provider_details={"finish": "tool_use"},
        )
    if any(p.outcome == "retried" for p in returns):
        return pm.ModelResponse(parts=[pm.ToolCallPart("weather", '{"city": "Lyon"}', "call-2")])
    return pm.ModelResponse(parts=[pm.TextPart("Sunny in Lyon, 21.5 degrees")], model_name="fn-model")


def make_agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(weather_model))

    @agent.tool_plain(retries=2)
    def weather(city: str) -> dict[str, object]:
        if city == "Paris":
            raise ModelRetry("no station in Paris, try Lyon")
        return {"temp": 21.5, "readings": 3, "city": city, "nested": [1, 2.0, None]}

    return agent


@pytest.fixture
def agent() -> Agent[None, str]:
    return make_agent()
