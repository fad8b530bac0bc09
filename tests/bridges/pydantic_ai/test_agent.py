"""A real pydantic-ai Agent (FunctionModel, no network) with a tool, an image and a retry, kept in
the store through both ways in: the ``message_history=`` helpers and the ConversationStore."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent, BinaryContent
from pydantic_ai import messages as pm
from pydantic_ai.conversation import Conversation

from axio_context_pydantic_ai import AxioConversationStore, load_messages, save_messages
from tests.support.backends import Backend

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 500
ADAPTER = pm.ModelMessagesTypeAdapter


def kinds(messages: list[pm.ModelMessage]) -> list[list[str]]:
    return [[p.part_kind for p in m.parts] for m in messages]


async def test_agent_run_through_message_history(backend: Backend, agent: Agent[None, str]) -> None:
    store = backend.store("chat")
    first = await agent.run(["What is the weather here?", BinaryContent(PNG, media_type="image/png")])
    assert first.output == "Sunny in Lyon, 21.5 degrees"
    # The run used the tool, was asked to retry it, and called it again.
    assert kinds(first.all_messages()) == [
        ["user-prompt"],
        ["thinking", "tool-call"],
        ["tool-return"],
        ["tool-call"],
        ["tool-return"],
        ["text"],
    ]
    await save_messages(store, first.new_messages())
    history = await load_messages(backend.store("chat"))
    assert history == ADAPTER.validate_json(first.all_messages_json())
    retried = history[2].parts[0]
    assert isinstance(retried, pm.ToolReturnPart) and retried.outcome == "retried"
    assert isinstance(history[0].parts[0], pm.UserPromptPart)
    image = history[0].parts[0].content[1]  # type: ignore[index]
    assert isinstance(image, BinaryContent) and image.data == PNG

    second = await agent.run("And tomorrow?", message_history=history)
    await save_messages(store, second.new_messages())
    assert await load_messages(store) == ADAPTER.validate_json(second.all_messages_json())
    assert len(await store.get_history()) == 12


async def test_agent_run_through_the_conversation_store(backend: Backend, agent: Agent[None, str]) -> None:
    store = AxioConversationStore(backend.handle, project="tests")
    result = await agent.run(
        ["Weather?", BinaryContent(PNG, media_type="image/png")],
        conversation=Conversation(conversation_id="c1"),
    )
    saved = await store.save(result, scope="alice")
    assert len(saved) == 6
    loaded = await store.load("c1")
    assert loaded is not None
    assert loaded.messages == ADAPTER.validate_json(result.all_messages_json())
    assert loaded.usage == result.usage
    assert loaded.revision == result.conversation.revision

    again = await agent.run("Again?", conversation=loaded)
    assert len(await store.save(again)) == 6
    entries = await store.load_entries("c1")
    assert entries is not None and len(entries) == 12
    assert [e.parent_id for e in entries[1:]] == [e.id for e in entries[:-1]]
    # The entries are messages of a session named after the conversation, filed under its scope.
    session = backend.store("c1")
    assert [m.id for m in await session.get_history()] == [e.id for e in entries]
    assert (await session.info()).project == "alice"
    assert await store.load("c1", scope="bob") is None


async def test_usage_of_each_response_is_recorded_and_limits_hold_across_a_reopen(
    backend: Backend, agent: Agent[None, str]
) -> None:
    """save_messages(usage=...) records each ModelResponse's usage with its message; pydantic-ai's
    UsageLimits, converted, are then checked against what is stored, after a restart too."""
    from pydantic_ai.usage import UsageLimits as PaiLimits

    from axio_context.usage_limits import UsageGuard, UsageLimitExceeded
    from axio_context.usage_limits.pydantic_bridge import from_pydantic_ai

    result = await agent.run(["Weather?", BinaryContent(PNG, media_type="image/png")])
    responses = [m for m in result.new_messages() if isinstance(m, pm.ModelResponse)]
    store = backend.store("chat", project="p")
    await save_messages(store, result.new_messages(), usage=backend.recorder(store), agent="weather")
    assert await load_messages(store) == ADAPTER.validate_json(result.all_messages_json())
    async with backend.open():  # a restart: a new connection or pool
        store = backend.store("chat", project="p")
        recorder = backend.recorder(store)
        totals = await recorder.totals(session_id="chat")
        assert totals.requests == len(responses) == result.usage.requests
        assert totals.input_tokens == result.usage.input_tokens
        assert totals.output_tokens == result.usage.output_tokens
        assert totals.tool_calls == result.usage.tool_calls
        assert await store.get_context_tokens() == (result.usage.input_tokens, result.usage.output_tokens)
        guard = UsageGuard(
            recorder, from_pydantic_ai(PaiLimits(request_limit=len(responses))), agent="weather"
        )
        with pytest.raises(UsageLimitExceeded, match="request_limit"):
            await guard.check_before_request()
