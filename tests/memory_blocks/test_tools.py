"""Letta's memory tools on a real store, called directly and by each framework's offline model:
pydantic-ai's FunctionModel and TestModel, and openai-agents with a fake model implementing its
``Model`` interface (as openai-agents' own tests do). A bad call comes back as error text the
model can act on; the framework never sees an exception."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as OAgent
from agents import ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from axio_context.memory_blocks import BlockStore, MemoryBlock, memory_tools
from axio_context_sqlite import connect
from axio_context_sqlite.memory import SQLiteBlockStore

#: (tool, arguments) the models call in turn, and what each tool's answer starts with.
CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_insert", {"label": "human", "new_str": "Likes tea", "insert_line": -1}, "Block 'human' edited"),
    ("memory_replace", {"label": "human", "old_str": "tea", "new_str": "green tea"}, "Block 'human' edited"),
    ("memory_replace", {"label": "nobody", "old_str": "a", "new_str": "b"}, "Error: no block 'nobody'"),
    ("memory_rethink", {"label": "plans", "new_memory": "Ship on Friday"}, "Block 'plans' created"),
    ("memory_rethink", {"label": "rules", "new_memory": "be rude"}, "Error: block 'rules' is read-only"),
    (
        "memory",
        {"command": "create", "path": "/memories/todo", "file_text": "a", "description": "d"},
        "Block 'todo' created",
    ),
    (
        "memory",
        {"command": "str_replace", "path": "/memories/todo", "old_str": "a", "new_str": "b"},
        "Block 'todo' edited",
    ),
    (
        "memory",
        {"command": "insert", "path": "/memories/todo", "insert_line": 0, "insert_text": "z"},
        "Block 'todo' edited",
    ),
    (
        "memory",
        {"command": "rename", "old_path": "/memories/todo", "new_path": "/memories/tasks"},
        "Block 'tasks' renamed",
    ),
    ("memory", {"command": "delete", "path": "/memories/plans"}, "Block 'plans' deleted"),
    ("memory", {"command": "explode", "path": "/memories/tasks"}, "Error: unknown command 'explode'"),
    ("memory_insert", {"label": "human", "new_str": "x" * 6000}, "Error: block 'human': the new value is"),
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[BlockStore]:
    async with connect(tmp_path / "tools.db") as conn:
        blocks = SQLiteBlockStore(conn)
        await blocks.create(MemoryBlock("human", "Name: Ada"), agent_id="a")
        await blocks.create(MemoryBlock("rules", "be kind", read_only=True), agent_id="a")
        yield blocks


async def _state(store: BlockStore) -> dict[str, str]:
    return {b.label: b.value for b in await store.list_blocks(agent_id="a")}


EXPECTED = {"human": "Name: Ada\nLikes green tea", "rules": "be kind", "tasks": "z\nb"}


def test_the_tools_have_letta_names_typed_signatures_and_docstrings() -> None:
    tools = memory_tools(BlockStore.__new__(BlockStore), "a")
    assert [t.__name__ for t in tools] == ["memory_insert", "memory_replace", "memory_rethink", "memory"]
    for tool in tools:
        assert inspect.iscoroutinefunction(tool) and tool.__doc__
        hints = inspect.signature(tool, eval_str=True)
        assert hints.return_annotation is str
        assert all(p.annotation is not inspect.Parameter.empty for p in hints.parameters.values())


async def test_called_directly(store: BlockStore) -> None:
    tools = {t.__name__: t for t in memory_tools(store, "a")}
    for name, args, expected in CALLS:
        answer = await tools[name](**args)
        assert answer.startswith(expected), (name, answer)
        assert "\n" not in answer
    assert await _state(store) == EXPECTED
    history = await store.history("human", agent_id="a")
    assert [v.agent_id for v in history] == ["a", "a", "a"]


def _pydantic_model() -> Callable[[list[pm.ModelMessage], AgentInfo], pm.ModelResponse]:
    answers: list[str] = []

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        answers.extend(str(p.content) for p in messages[-1].parts if isinstance(p, pm.ToolReturnPart))
        step = len(answers)
        if step < len(CALLS):
            name, args, _ = CALLS[step]
            return pm.ModelResponse(parts=[pm.ToolCallPart(name, args, f"call-{step}")])
        return pm.ModelResponse(parts=[pm.TextPart(json.dumps(answers))])

    return model


async def test_pydantic_ai_function_model_calls_them(store: BlockStore) -> None:
    agent: Agent[None, str] = Agent(FunctionModel(_pydantic_model()), tools=memory_tools(store, "a"))
    result = await agent.run("remember things")
    answers = json.loads(result.output)
    assert len(answers) == len(CALLS)
    for answer, (_, _, expected) in zip(answers, CALLS, strict=True):
        assert answer.startswith(expected)
    assert await _state(store) == EXPECTED


async def test_pydantic_ai_test_model_calls_every_tool(store: BlockStore) -> None:
    # TestModel makes up arguments from each tool's schema: whatever they are, no exception.
    agent: Agent[None, str] = Agent(TestModel(), tools=memory_tools(store, "a"))
    result = await agent.run("go")
    returns = [
        p for m in result.all_messages() for p in getattr(m, "parts", []) if isinstance(p, pm.ToolReturnPart)
    ]
    names = {"memory", "memory_insert", "memory_rethink", "memory_replace"}
    assert {p.tool_name for p in returns} == names
    assert all(isinstance(p.content, str) for p in returns)


class _ScriptedModel(Model):
    """openai-agents' Model interface, answering from a script: a tool call per turn, then text."""

    def __init__(self) -> None:
        self.answers: list[str] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.answers = [
            str(i["output"]) for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        step = len(self.answers)
        if step < len(CALLS):
            name, args_, _ = CALLS[step]
            call = ResponseFunctionToolCall(
                id=f"fc-{step}",
                call_id=f"call-{step}",
                type="function_call",
                name=name,
                arguments=json.dumps(args_),
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(text="done", type="output_text", annotations=[], logprobs=[])
        message = ResponseOutputMessage(
            id="m", type="message", role="assistant", content=[text], status="completed"
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this test does not stream")


async def test_openai_agents_function_tools_are_called(store: BlockStore) -> None:
    set_tracing_disabled(True)  # no key and no network here: nothing to export traces to
    model = _ScriptedModel()
    agent = OAgent(name="mem", model=model, tools=[function_tool(t) for t in memory_tools(store, "a")])
    result = await Runner.run(agent, "remember things", max_turns=len(CALLS) + 2)
    assert result.final_output == "done"
    assert len(model.answers) == len(CALLS)
    for answer, (_, _, expected) in zip(model.answers, CALLS, strict=True):
        assert answer.startswith(expected), answer
    assert await _state(store) == EXPECTED
