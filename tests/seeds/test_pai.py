"""Code written for pai-agent-sdk runs unchanged (issue 35, items 7-8), tested against pai-agent-sdk
0.16.1's own ``AgentContext`` and ``ResumableState``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from pai_agent_sdk import context as pai
from pai_agent_sdk.usage import ExtraUsageRecord as PaiExtraUsage
from pydantic import ValidationError
from pydantic_ai import messages as pm
from pydantic_ai import usage as pai_usage

from axio_context.state import (
    AgentContext,
    ModelConfig,
    ResumableState,
    RunUsage,
    StateDecodeError,
    ToolConfig,
)


@dataclass
class Environment:
    """What pai's environment gives a context: a file operator, a shell, resources."""

    file_operator: object
    shell: object
    resources: object


# --- 7. the seed's own AgentContext call, and ToolConfig -----------------------------------------


async def test_the_seeds_agent_context_example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tv-key")
    file_operator, shell, resources = object(), object(), {"browser": object()}
    ctx = AgentContext(
        file_operator=file_operator,
        shell=shell,
        resources=resources,
        model_cfg=ModelConfig(context_window=200_000),
        tool_config=ToolConfig(skip_url_verification=False, my_custom_key="value"),
    )
    async with ctx:
        ctx.user_prompts = ["build the thing"]
    assert ctx.file_operator is file_operator and ctx.shell is shell and ctx.resources is resources
    assert ctx.tool_config.tavily_api_key == "tv-key"  # read from the environment, as pai
    assert ctx.tool_config.my_custom_key == "value"  # pai's extra="allow"
    assert "tv-key" not in repr(ctx.tool_config)
    saved = ctx.export_state().to_dict()
    assert saved["user_prompts"] == ["build the thing"]
    assert not {"file_operator", "shell", "resources", "env", "tool_config"} & set(saved)  # held only


def test_the_environment_fills_file_operator_shell_and_resources() -> None:
    env = Environment(object(), object(), object())
    ctx = AgentContext(env=env)
    assert (ctx.file_operator, ctx.shell, ctx.resources) == (env.file_operator, env.shell, env.resources)
    sub = ctx.create_subagent_context("search", agent_id="s1")
    assert sub.env is env and sub.shell is env.shell and sub.parent_run_id == ctx.run_id
    assert ctx.agent_registry["s1"] == {"agent_id": "s1", "agent_name": "search", "parent_agent_id": "main"}


# --- a state saved by pai-agent-sdk loads into ours, and ours into pai's -------------------------


def _pai_context() -> pai.AgentContext:
    ctx = pai.AgentContext(model_cfg=pai.ModelConfig(context_window=100_000))
    ctx.user_prompts = ["summarize the repo"]
    ctx.steering_messages = ["focus on tests"]
    ctx.handoff_message = "continue from the plan"
    ctx.deferred_tool_metadata = {"call-1": {"reason": "needs approval"}}
    ctx.need_user_approve_tools = ["shell"]
    ctx.auto_load_files = ["README.md"]
    ctx.subagent_history = {
        "search": [
            pm.ModelRequest(parts=[pm.UserPromptPart("find the parser")]),
            pm.ModelResponse(parts=[pm.TextPart("it is in src/parse.py")], model_name="tiny"),
        ]
    }
    ctx.agent_registry = {"search": pai.AgentInfo(agent_id="search", agent_name="search")}
    usage = pai_usage.RunUsage(requests=2, input_tokens=120, output_tokens=30, cache_read_tokens=10)
    ctx.extra_usages = [PaiExtraUsage(uuid="u1", agent="search", model_id="tiny", usage=usage)]
    return ctx


def test_a_state_pai_exports_loads_into_ours_and_back() -> None:
    theirs = _pai_context().export_state(include_extra_usages=True)
    text = theirs.model_dump_json()

    ours = ResumableState.model_validate_json(text)
    assert ours.user_prompts == ["summarize the repo"] and ours.unknown_fields == {}
    assert isinstance(ours.extra_usages[0].usage, RunUsage)
    assert ours.extra_usages[0].usage.total_tokens == 150
    ctx = AgentContext().with_state(ours)
    again = ctx.export_state(include_extra_usages=True).model_dump_json()

    back = pai.ResumableState.model_validate_json(again)
    assert back.model_dump(mode="json") == theirs.model_dump(mode="json")
    restored = pai.AgentContext().with_state(back)
    assert restored.subagent_history["search"][1].parts[0].content == "it is in src/parse.py"  # type: ignore[union-attr]


def test_a_state_ours_saves_to_a_file_loads_in_pai(tmp_path: Path) -> None:
    ctx = AgentContext(user_prompts=["a"], steering_messages=["b"], auto_load_files=["c"])
    path = tmp_path / "session.json"
    path.write_text(ctx.export_state().model_dump_json(indent=2))  # pai's documented save
    loaded = pai.ResumableState.model_validate_json(path.read_text())
    assert (loaded.user_prompts, loaded.steering_messages, loaded.auto_load_files) == (["a"], ["b"], ["c"])


# --- 8. bad saved data: pai's except clause catches ours ----------------------------------------


@pytest.mark.parametrize("bad", ['{"user_prompts": 5}', "[1, 2]", "not json"])
def test_pais_except_validation_error_catches_a_bad_state(bad: str) -> None:
    with pytest.raises(ValidationError) as theirs:
        pai.ResumableState.model_validate_json(bad)
    caught: ValidationError | None = None
    try:  # pai code's own clause
        ResumableState.model_validate_json(bad)
    except ValidationError as exc:
        caught = exc
    assert isinstance(caught, StateDecodeError)  # and still ours
    assert caught.title == theirs.value.title == "ResumableState"
    assert caught.error_count() == 1 and "ResumableState" in str(caught)
    json.dumps(caught.errors())  # the structured errors pai code may log
