"""pydantic-ai messages through the store: back equal to what pydantic-ai loads from its own JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic_ai import messages as pm

from axio_context import MemoryContextStore
from axio_context.blocks import (
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from axio_context.messages import searchable_text
from axio_context.tokens import IMAGE_TOKENS, estimate_message_tokens
from axio_context_pydantic_ai import (
    JSON_KEY,
    MessageJSONError,
    UnknownPartError,
    load_messages,
    load_messages_json,
    save_messages,
    save_messages_json,
)
from tests.support.backends import Backend

ADAPTER = pm.ModelMessagesTypeAdapter
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
WHEN = datetime(2026, 11, 26, 1, 2, 3, 456789, tzinfo=UTC)


def rich_history() -> list[pm.ModelMessage]:
    """Every kind of content the issue names, with the fields pydantic-ai keeps."""
    return [
        pm.ModelRequest(
            parts=[
                pm.SystemPromptPart("You are terse.", timestamp=WHEN),
                pm.UserPromptPart(
                    [
                        "Describe these",
                        pm.BinaryContent(PNG, media_type="image/png"),
                        pm.ImageUrl("https://example.com/cat.jpg"),
                        pm.DocumentUrl("https://example.com/a.pdf"),
                    ],
                    timestamp=WHEN,
                ),
            ],
            instructions="be brief",
            run_id="run-1",
        ),
        pm.ModelResponse(
            parts=[
                pm.ThinkingPart(
                    "looking closely",
                    id="th-1",
                    signature="c2lnbmF0dXJl",
                    provider_name="anthropic",
                    provider_details={"redacted": False, "budget": 2048},
                ),
                pm.ToolCallPart("measure", {"what": "cat", "scale": 1.0, "count": 2}, "call-a"),
                pm.ToolCallPart("measure", '{"what": "dog"', "call-b"),  # not valid JSON: kept as given
                pm.ToolCallPart("noargs", None, "call-c"),
            ],
            usage=pm.RequestUsage(
                input_tokens=1200, output_tokens=85, cache_read_tokens=40, details={"reasoning": 30}
            ),
            model_name="claude-x",
            provider_name="anthropic",
            provider_url="https://api.anthropic.com",
            provider_details={"finish_reason": "tool_use", "latency": 0.25},
            provider_response_id="resp-42",
            finish_reason="tool_call",
            timestamp=WHEN,
        ),
        pm.ModelRequest(
            parts=[
                pm.ToolReturnPart(
                    "measure", {"size": 31.5, "unit": "cm", "ok": True, "n": 3}, "call-a", timestamp=WHEN
                ),
                pm.ToolReturnPart(
                    "measure",
                    "bad arguments",
                    "call-b",
                    outcome="retried",
                    timestamp=WHEN,
                    retry=pm.RetryInfo(cause="validation_error"),
                ),
                pm.ToolReturnPart(
                    "noargs",
                    [1, 2.5, None, "x", {"deep": [True]}],
                    "call-c",
                    outcome="failed",
                    timestamp=WHEN,
                ),
            ]
        ),
        pm.ModelResponse(
            parts=[pm.TextPart("A cat, 31.5 cm.", id="t-1")], timestamp=WHEN, model_name="claude-x"
        ),
    ]


def pydantic_reloaded(messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
    """What pydantic-ai itself loads from its own JSON of ``messages``."""
    return ADAPTER.validate_json(ADAPTER.dump_json(messages))


async def test_round_trip_equals_pydantic_ais_own_load(backend: Backend) -> None:
    history = rich_history()
    store = backend.store("rich")
    await save_messages(store, history)
    back = await load_messages(backend.store("rich"))
    assert back == pydantic_reloaded(history)
    assert json.loads(ADAPTER.dump_json(back)) == json.loads(ADAPTER.dump_json(history))
    # The details equality may not look at, checked one by one.
    response = back[1]
    assert isinstance(response, pm.ModelResponse)
    assert response.usage.input_tokens == 1200 and response.usage.details == {"reasoning": 30}
    assert (response.model_name, response.provider_name, response.provider_response_id) == (
        "claude-x",
        "anthropic",
        "resp-42",
    )
    assert response.timestamp == WHEN
    thinking, call_a, call_b, _ = response.parts
    assert isinstance(thinking, pm.ThinkingPart) and thinking.signature == "c2lnbmF0dXJl"
    assert thinking.provider_details == {"redacted": False, "budget": 2048}
    assert isinstance(call_a, pm.ToolCallPart) and call_a.args == {"what": "cat", "scale": 1.0, "count": 2}
    assert isinstance(call_a.args, dict) and isinstance(call_a.args["scale"], float)
    assert isinstance(call_b, pm.ToolCallPart) and call_b.args == '{"what": "dog"'
    returns = back[2].parts
    assert [p.outcome for p in returns if isinstance(p, pm.ToolReturnPart)] == [
        "success",
        "retried",
        "failed",
    ]
    assert isinstance(returns[1], pm.ToolReturnPart) and returns[1].retry == pm.RetryInfo(
        cause="validation_error"
    )
    prompt = back[0].parts[1]
    assert isinstance(prompt, pm.UserPromptPart) and isinstance(prompt.content, list)
    image = prompt.content[1]
    assert isinstance(image, pm.BinaryContent) and image.data == PNG and image.media_type == "image/png"
    assert prompt.content[2] == pm.ImageUrl("https://example.com/cat.jpg")


async def test_native_blocks_beside_the_json(backend: Backend) -> None:
    store = backend.store("native")
    await save_messages(store, rich_history())
    stored = await store.get_history()
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    first = stored[0]
    assert first.metadata is not None and isinstance(first.metadata[JSON_KEY], str)
    assert first.timestamp == WHEN
    assert isinstance(first.content[2], ImageBlock) and first.content[2].data == PNG  # bytes, not base64
    assert isinstance(first.content[3], ProviderBlock) and first.content[3].kind == "image-url"
    kinds = [type(b) for b in stored[1].content]
    assert kinds == [ReasoningBlock, ToolUseBlock, ToolUseBlock, ToolUseBlock]
    bad_args = stored[1].content[2]
    assert isinstance(bad_args, ToolUseBlock) and bad_args.input == {"arguments": '{"what": "dog"'}
    results = stored[2].content
    assert all(isinstance(b, ToolResultBlock) for b in results)
    assert [b.is_error for b in results if isinstance(b, ToolResultBlock)] == [False, True, True]
    assert stored[3].content == [TextBlock(text="A cat, 31.5 cm.")]
    # Token estimates count the image as one image, and never the JSON copy (its base64) in the metadata.
    assert IMAGE_TOKENS < estimate_message_tokens(first) < IMAGE_TOKENS + 100 < len(PNG) // 4
    assert "Describe these" in searchable_text(first)


async def test_search_finds_pydantic_ai_text(backend: Backend) -> None:
    await save_messages(backend.store("searchable"), rich_history())
    hits = await backend.search("measure cat", mode="keyword")
    assert {h.session_id for h in hits} == {"searchable"}


async def test_tail_read_and_memory_store() -> None:
    store = MemoryContextStore()
    history = rich_history()
    await save_messages(store, history)
    assert await load_messages(store, limit=2) == pydantic_reloaded(history)[-2:]
    assert await load_messages(store, limit=0) == []


NEWER = {
    "kind": "response",
    "parts": [
        {
            "part_kind": "text",
            "content": "known text",
            "id": None,
            "provider_name": None,
            "provider_details": None,
            "citations": None,
        },
        {"part_kind": "hologram", "content": "a part from the future", "depth": 3.0, "layers": [1, 2]},
    ],
    "usage": {"input_tokens": 5, "output_tokens": 2},
    "model_name": "future-model",
    "timestamp": "2027-01-01T00:00:00Z",
    "a_new_field": {"x": 1},
}


async def test_newer_message_json_is_kept_whole_and_given_back(backend: Backend) -> None:
    store = backend.store("newer")
    known = ADAPTER.dump_json(rich_history()[:1])
    await save_messages_json(store, known)
    await save_messages_json(store, json.dumps([NEWER]))
    given_back = json.loads(await load_messages_json(store))
    assert given_back[1] == NEWER
    assert given_back[0] == json.loads(known)[0]
    with pytest.raises(UnknownPartError, match=r"message 1 .*hologram.*load_messages_json"):
        await load_messages(store)
    stored = await store.get_history()
    assert stored[1].content[0] == TextBlock(text="known text")
    future = stored[1].content[1]
    assert (
        isinstance(future, ProviderBlock) and future.kind == "hologram" and future.data == NEWER["parts"][1]
    )
    assert "a part from the future" in searchable_text(stored[1])


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("not json", "must be JSON"),
        ('{"kind": "request"}', "must be a JSON list"),
        ('[{"kind": "request", "parts": []}, {"parts": []}]', "message 1: not a pydantic-ai message"),
        ('[{"kind": "response", "parts": "x"}]', "needs a list of parts"),
        ("[42]", "got int"),
    ],
)
async def test_bad_json_is_refused_and_nothing_is_stored(backend: Backend, data: str, words: str) -> None:
    store = backend.store("bad")
    await save_messages(store, rich_history()[:1])
    with pytest.raises(MessageJSONError, match=words):
        await save_messages_json(store, data)
    assert len(await store.get_history()) == 1


async def test_a_summary_without_json_is_rebuilt() -> None:
    from axio_context import Message

    store = MemoryContextStore(
        [
            Message(role="user", content=[TextBlock(text="summary of before")]),
            Message(role="assistant", content=[TextBlock(text="ok")]),
        ]
    )
    back = await load_messages(store)
    assert isinstance(back[0], pm.ModelRequest) and back[0].parts[0].content == "summary of before"  # type: ignore[union-attr]
    assert isinstance(back[1], pm.ModelResponse) and back[1].text == "ok"
