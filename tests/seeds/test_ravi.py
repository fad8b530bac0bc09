"""Code written for ravi runs unchanged (issue 35, items 1-5), in ravi's own call forms.

ravi is not on PyPI: its ``ChatMessage`` (a role and a string content), its duck-typed
strategies (any object with ``async def compact(raw_history)``), its embedding and LLM clients
are written here as ravi's documents show them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from axio_context import CompactionPipeline as TopLevelPipeline
from axio_context import Message
from axio_context.agents import (
    AgentContext,
    CompactionPipeline,
    ContextConfig,
    InMemoryHistoryProvider,
    SummarizationCompaction,
    TokenBudgetComposedStrategy,
    current_agent_label,
    current_thread_id,
)
from axio_context.blocks import TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.memory import Document, InMemoryTaskStore, InMemoryVectorStore, TaskStore
from axio_context.testing import text


@dataclass
class ChatMessage:
    """ravi's chat message: a role and a string content."""

    role: str
    content: str


class KeepLast:
    """A ravi strategy: "just an object with one method, async def compact(raw_history)"."""

    def __init__(self, n: int) -> None:
        self.n = n

    async def compact(self, raw_history: list[Any]) -> list[Any]:
        return list(raw_history[-self.n :])


# --- 1. providers take ravi's ChatMessage and its dict form ---------------------------------------


async def test_a_provider_takes_ravis_chat_message_and_its_dict() -> None:
    provider = InMemoryHistoryProvider()
    await provider.append("a1", ChatMessage(role="user", content="hello"), session_id="s")
    await provider.append("a1", {"role": "assistant", "content": "hi there"}, session_id="s")
    got = await provider.get_messages("a1", session_id="s")
    assert got == [text("user", "hello"), text("assistant", "hi there")]
    assert [m.text for m in got] == ["hello", "hi there"]  # ravi's string content, as .text


async def test_an_agent_context_takes_chat_messages_and_windows_them() -> None:
    ctx = AgentContext(ContextConfig.default(KeepLast(2)), "a1")
    await ctx.append_many("s", [ChatMessage("system", "be brief"), ChatMessage("user", "one")])
    async with ctx.run("s") as run:
        await run.append({"role": "assistant", "content": "two"})
    window = await ctx.get_prompt_window("s")
    assert [(m.role, m.text) for m in window] == [("user", "one"), ("assistant", "two")]


async def test_openai_shaped_tool_calls_and_results_become_blocks() -> None:
    provider = InMemoryHistoryProvider()
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}
    await provider.append_many(
        "a1",
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        ],
        session_id="s",
    )
    first, second = await provider.get_messages("a1", session_id="s")
    assert first.content == [ToolUseBlock(id="c1", name="ls", input={"path": "."})]
    assert second == Message("user", [ToolResultBlock(tool_use_id="c1", content="a.txt")])


async def test_the_sqlite_provider_takes_chat_messages_too(tmp_path: Path) -> None:
    from axio_context_sqlite.agents import sqlite_config

    async with sqlite_config(tmp_path / "agents.db") as config:
        await config.history.append("a1", ChatMessage("user", "kept"), session_id="s")
        assert await config.history.get_messages("a1", session_id="s") == [text("user", "kept")]


async def test_something_else_is_still_refused_before_any_write() -> None:
    provider = InMemoryHistoryProvider()
    with pytest.raises(TypeError, match=r"messages\[1\] must be a Message or a chat message"):
        await provider.append_many("a1", [ChatMessage("user", "x"), 42], session_id="s")  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"role 'robot'"):
        await provider.append("a1", {"role": "robot", "content": "x"}, session_id="s")
    assert await provider.count_messages("a1", session_id="s") == 0


# --- 2. duck-typed strategies in every pipeline --------------------------------------------------


async def test_a_duck_typed_strategy_fits_every_pipeline() -> None:
    raw = [text("user", str(i)) for i in range(6)]
    assert await CompactionPipeline([KeepLast(3), KeepLast(2)]).compact(raw) == raw[-2:]
    assert await TopLevelPipeline([KeepLast(3)]).compact(raw) == raw[-3:]
    assert await TokenBudgetComposedStrategy([KeepLast(1)], token_budget=1).compact(raw) == raw[-1:]
    assert TopLevelPipeline is CompactionPipeline  # one class, ravi's compact() included
    chat = [ChatMessage("user", "a"), ChatMessage("assistant", "b")]
    assert await CompactionPipeline([KeepLast(1)]).compact(chat) == [text("assistant", "b")]


# --- 3. ravi's parameter names -------------------------------------------------------------------


class EmbeddingClient:
    """ravi's embedding client: an ``embed(texts)`` giving plain lists, no model name."""

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "cat" in t else [0.0, 1.0] for t in texts]


async def test_vector_store_takes_embedding_client() -> None:
    store = InMemoryVectorStore(embedding_client=EmbeddingClient())
    await store.add([Document(id="1", content="a cat"), Document(id="2", content="a dog")])
    [best] = await store.search_text("my cat", limit=1)
    assert best.id == "1"


class LLMClient:
    """ravi's LLM client: ``complete(messages)`` answering with a text."""

    def __init__(self) -> None:
        self.requests: list[list[dict[str, str]]] = []

    async def complete(self, messages: list[dict[str, str]]) -> str:
        self.requests.append(messages)
        return "the user counted to twenty"


async def test_summarization_takes_an_llm_client() -> None:
    llm = LLMClient()
    strategy = SummarizationCompaction(llm=llm, recent_token_budget=10, min_old_tokens=1)
    raw = [text("user", f"number {i} " * 10) for i in range(20)]
    view = await strategy.compact(raw)
    assert view[0].content == [TextBlock(text="the user counted to twenty")]
    assert len(llm.requests) == 1 and llm.requests[0][0]["role"] == "system"
    assert "number 0" in llm.requests[0][1]["content"]


# --- 4. TaskStore() is the in-memory store -------------------------------------------------------


async def test_task_store_is_instantiable_as_in_ravi() -> None:
    store = TaskStore()  # type: ignore[misc]  # mypy refuses to call any Protocol; Python runs it
    assert isinstance(store, InMemoryTaskStore) and isinstance(store, TaskStore)
    board = await store.create_task_list("conv", ["plan", "build"])
    assert [t.title for t in board.tasks] == ["plan", "build"]


# --- 5. the context variables outside a run ------------------------------------------------------


async def test_outside_a_run_the_thread_is_default() -> None:
    assert current_thread_id.get() == "default"
    assert current_agent_label.get() == ""
    ctx = AgentContext(ContextConfig.default(), "a1", agent_label="Helper")
    async with ctx.run("t1"):
        assert (current_thread_id.get(), current_agent_label.get()) == ("t1", "Helper")
        seen = await asyncio.create_task(asyncio.sleep(0, current_thread_id.get()))
        assert seen == "t1"
    assert current_thread_id.get() == "default"
