"""ResumableState, AgentContext and ModelConfig with pai-agent-sdk's names: pai's documented
subclassing example, JSON round trips in both spellings, unknown fields kept, bad input named."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from axio_context.blocks import ProviderBlock, TextBlock
from axio_context.messages import Message
from axio_context.state import (
    AgentContext,
    ExtraUsageRecord,
    ModelConfig,
    ResumableState,
    RunUsage,
    StateDecodeError,
    StateEncodeError,
    message_dict_of,
    message_of,
)

REQUEST = {
    "kind": "request",
    "parts": [
        {"part_kind": "user-prompt", "content": "find the config", "timestamp": "2025-01-01T00:00:00Z"}
    ],
}
RESPONSE = {
    "kind": "response",
    "parts": [
        {"part_kind": "text", "content": "it is in etc"},
        {"part_kind": "tool-call", "tool_name": "grep", "args": {"q": "x"}, "tool_call_id": "c1"},
    ],
    "model_name": "gpt-test",
}


# pai-agent-sdk's documented subclassing example (ResumableState.restore's docstring), as written.
class MyState(ResumableState):
    custom_field: str = ""

    def restore(self, ctx: MyContext) -> None:
        super().restore(ctx)
        ctx.custom_field = self.custom_field


class MyContext(AgentContext):
    state_type = MyState
    custom_field: str = ""


def test_pai_subclassing_example_round_trips_through_json() -> None:
    ctx = MyContext(
        custom_field="kept", user_prompts=["hi"], subagent_history={"explorer-a7b9": [REQUEST, RESPONSE]}
    )
    state = ctx.export_state()
    assert isinstance(state, MyState)
    text = state.model_dump_json(indent=2)
    restored = MyContext().with_state(MyState.model_validate_json(text))
    assert restored.custom_field == "kept"
    assert restored.user_prompts == ["hi"]
    assert restored.subagent_history == {"explorer-a7b9": [REQUEST, RESPONSE]}
    assert MyState.from_json(state.to_json()) == state


def test_with_state_none_does_nothing_and_chains() -> None:
    ctx = AgentContext(handoff_message="as it was")
    assert ctx.with_state(None) is ctx
    assert ctx.handoff_message == "as it was"
    assert ctx.with_state(ResumableState(handoff_message="new")) is ctx
    assert ctx.handoff_message == "new"


def test_restore_copies_so_the_state_and_context_do_not_share_lists() -> None:
    state = ResumableState(need_user_approve_tools=["rm"], deferred_tool_metadata={"c1": {"a": 1}})
    ctx = AgentContext().with_state(state)
    ctx.need_user_approve_tools.append("shell")
    ctx.deferred_tool_metadata["c2"] = {}
    assert state.need_user_approve_tools == ["rm"]
    assert state.deferred_tool_metadata == {"c1": {"a": 1}}


def test_export_state_follows_pais_defaults() -> None:
    usage = ExtraUsageRecord(
        uuid="u1", agent="search", model_id="openai:gpt-4o", usage=RunUsage(input_tokens=5)
    )
    ctx = AgentContext(
        extra_usages=[usage],
        subagent_history={"s": [REQUEST]},
        agent_registry={"s": {"agent_id": "s"}},
        need_user_approve_tools=["shell"],
        deferred_tool_metadata={"call-1": {"why": "approval"}},
        handoff_message="continue from step 3",
    )
    default = ctx.export_state()
    assert default.extra_usages == []  # per-run billing data: only for crash recovery
    assert default.subagent_history == {"s": [REQUEST]}
    assert default.need_user_approve_tools == ["shell"]
    assert default.deferred_tool_metadata == {"call-1": {"why": "approval"}}
    assert default.handoff_message == "continue from step 3"
    slim = ctx.export_state(include_subagent=False, include_extra_usages=True)
    assert slim.subagent_history == {} and slim.agent_registry == {}
    assert slim.extra_usages == [usage]


def test_subclass_json_loads_into_the_base_and_back_without_losing_fields() -> None:
    text = MyState(custom_field="x", user_prompts=["a"]).to_json()
    base = ResumableState.from_json(text)
    assert base.unknown_fields == {"custom_field": "x"}
    again = MyState.model_validate_json(base.model_dump_json())
    assert again.custom_field == "x" and again.user_prompts == ["a"]


def test_base_json_loads_into_a_subclass_with_defaults() -> None:
    state = MyState.from_json(ResumableState(handoff_message="h").to_json())
    assert state.custom_field == "" and state.handoff_message == "h"


def test_a_newer_versions_fields_are_kept_whole() -> None:
    future = {"handoff_message": "h", "memory_v9": {"nested": [1, 2, {"deep": True}]}, "flag": None}
    state = ResumableState.from_dict(future)
    assert state.unknown_fields == {"memory_v9": {"nested": [1, 2, {"deep": True}]}, "flag": None}
    out = json.loads(state.to_json())
    assert out["memory_v9"] == future["memory_v9"] and "flag" in out
    assert ResumableState.model_validate(state.model_dump()).unknown_fields == state.unknown_fields


def test_a_state_written_by_pai_loads() -> None:
    pai = {
        "subagent_history": {"explorer-a7b9": [REQUEST, RESPONSE]},
        "extra_usages": [
            {
                "uuid": "call-1",
                "agent": "image_understanding",
                "model_id": "openai:gpt-4o",
                "usage": {
                    "input_tokens": 10,
                    "output_tokens": 3,
                    "requests": 1,
                    "details": {"reasoning_tokens": 2},
                },
            }
        ],
        "user_prompts": "summarise the repo",  # pai's `str | Sequence[UserContent] | None`
        "steering_messages": [],
        "handoff_message": None,
        "deferred_tool_metadata": {},
        "agent_registry": {},
        "need_user_approve_tools": ["shell"],
        "need_user_approve_mcps": [],
        "auto_load_files": [],
        "tasks": {},
    }
    state = ResumableState.model_validate_json(json.dumps(pai))
    assert state.user_prompts == ["summarise the repo"]
    assert state.extra_usages[0].usage.details == {"reasoning_tokens": 2}
    assert ResumableState.from_dict({**pai, "user_prompts": None}).user_prompts == []


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ('{"user_prompts": [1]}', "user_prompts"),
        ('{"extra_usages": [{"uuid": "u"}]}', "extra_usages"),
        ("[1, 2]", "JSON object"),
        ("{not json", "not a JSON object"),
    ],
)
def test_bad_json_is_a_named_decode_error(data: str, named: str) -> None:
    with pytest.raises(StateDecodeError, match=named):
        ResumableState.from_json(data)


def test_a_value_that_cannot_be_encoded_names_the_field() -> None:
    state = ResumableState(deferred_tool_metadata={"c": {"handle": object()}})
    with pytest.raises(StateEncodeError, match="deferred_tool_metadata"):
        state.to_json()


async def test_agent_context_is_an_async_context_manager_entered_once() -> None:
    ctx = AgentContext(model_cfg=ModelConfig(context_window=200_000, has_image_capability=True))
    async with ctx.with_state(ResumableState(user_prompts=["p"])) as entered:
        assert entered is ctx and ctx.start_at is not None and ctx.end_at is None
        with pytest.raises(RuntimeError, match="already entered"):
            await ctx.__aenter__()
    assert ctx.end_at is not None and ctx.end_at >= ctx.start_at
    async with ctx:  # entered again after it was left
        assert ctx.user_prompts == ["p"]


def test_model_config_names() -> None:
    cfg = ModelConfig(context_window=128_000, has_image_capability=True, has_video_capability=False)
    assert (cfg.context_window, cfg.has_vision, cfg.has_video_understanding) == (128_000, True, False)
    assert ModelConfig().context_window is None
    sub = AgentContext(model_cfg=cfg).create_subagent_context()
    assert sub.model_cfg is cfg and sub.parent_run_id is not None


def test_subagent_messages_keep_pais_dict_exactly() -> None:
    for item in (REQUEST, RESPONSE):
        message = message_of(item)
        assert message_dict_of(message) == item
        stored = msgspec.msgpack.decode(msgspec.msgpack.encode(message), type=Message)
        assert message_dict_of(stored) == item
    assert message_of(REQUEST).text == "find the config"
    assert "grep" in message_of(RESPONSE).text and message_of(RESPONSE).role == "assistant"


def test_a_message_written_otherwise_comes_back_as_a_minimal_pai_dict() -> None:
    reply = Message(role="assistant", content=[TextBlock(text="done")])
    assert message_dict_of(reply) == {"kind": "response", "parts": [{"part_kind": "text", "content": "done"}]}
    other = Message(role="user", content=[ProviderBlock(provider="x", kind="y", data={})])
    assert message_dict_of(other)["kind"] == "request"
    bad: Any = ["not", "a", "dict"]
    with pytest.raises(TypeError, match="must be a dict"):
        message_of(bad)
