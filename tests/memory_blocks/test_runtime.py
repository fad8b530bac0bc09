"""The runtime: ``AgentContext.get_prompt_window`` puts the agent's blocks into the system
message in the documented format, and the window's token count (a token-budget pipeline's)
includes them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from axio_context import Message
from axio_context.agents import AgentContext, ContextConfig
from axio_context.agents.compaction import SlidingWindowCompaction
from axio_context.backends.registry import open_database
from axio_context.blocks import TextBlock
from axio_context.compaction.strategies import HardTruncation
from axio_context.memory_blocks import BlockStore, MemoryBlock, render_blocks
from axio_context.tokens import estimate_tokens


@pytest.fixture
async def blocks(axio_database_location: str) -> AsyncIterator[BlockStore]:
    async with open_database(axio_database_location) as db:
        yield db.memory_stores().blocks()


def _msg(role: str, text: str) -> Message:
    return Message(role=role, content=[TextBlock(text=text)])  # type: ignore[arg-type]


def _text(message: Message) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


async def test_the_window_carries_the_agents_blocks_in_the_system_message(blocks: BlockStore) -> None:
    await blocks.create(MemoryBlock("persona", "I am terse.", description="who I am", limit=50), agent_id="a")
    await blocks.create(MemoryBlock("human", 'Ada <ada@example.org> & "friends"'), agent_id="a")
    await blocks.create(MemoryBlock("secret", "not for a"), agent_id="b")
    ctx = AgentContext(ContextConfig.default(), "a", blocks=blocks)
    await ctx.append("s", _msg("system", "You help."))
    await ctx.append("s", _msg("user", "hi"))

    window = await ctx.get_prompt_window("s")

    assert [m.role for m in window] == ["system", "user"]
    assert _text(window[0]) == "You help." + (
        "<memory_blocks>\n"
        "The blocks below are your core memory. Edit them with the memory tools.\n"
        "\n"
        '<block label="human" version="1" chars="33" limit="5000" read_only="false">\n'
        "<value>\n"
        'Ada <ada@example.org> & "friends"\n'
        "</value>\n"
        "</block>\n"
        '<block label="persona" version="1" chars="11" limit="50" read_only="false">\n'
        "<description>who I am</description>\n"
        "<value>\n"
        "I am terse.\n"
        "</value>\n"
        "</block>\n"
        "</memory_blocks>"
    )
    assert [m.role for m in await ctx.get_messages("s")] == ["system", "user"]  # nothing stored changed
    assert len((await ctx.get_messages("s"))[0].content) == 1


async def test_without_a_system_message_one_is_put_first(blocks: BlockStore) -> None:
    await blocks.create(MemoryBlock("human", "Ada"), agent_id="a")
    ctx = AgentContext(ContextConfig.default(SlidingWindowCompaction(2)), "a", blocks=blocks)
    for n in range(5):
        await ctx.append("s", _msg("user", f"m{n}"))
    window = await ctx.get_prompt_window("s")
    assert [m.role for m in window] == ["system", "user", "user"][: len(window)]
    assert _text(window[0]) == render_blocks(await blocks.list_blocks(agent_id="a"))
    assert render_blocks([]) == ""


async def test_the_token_budget_counts_the_blocks(blocks: BlockStore) -> None:
    history = [_msg("system", "sys"), *(_msg("user", "x" * 400) for _ in range(10))]
    budget = estimate_tokens(history) + 10
    pipeline = HardTruncation(max_tokens=budget)
    plain = AgentContext(ContextConfig.default(pipeline), "a")
    with_blocks = AgentContext(ContextConfig.default(pipeline), "a", blocks=blocks)
    for m in history:
        await plain.append("s", m)
    assert len(await plain.get_prompt_window("s")) == len(history)  # it fits without blocks

    await blocks.create(MemoryBlock("big", "y" * 2000), agent_id="a")
    window = await with_blocks.get_prompt_window("s")
    assert "y" * 2000 in _text(window[0])
    assert estimate_tokens(window) <= budget
    assert len(window) < len(history)  # the blocks' tokens pushed older messages out
