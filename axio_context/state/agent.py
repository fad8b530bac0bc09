"""The agent context (pai-agent-sdk's ``AgentContext`` names): the session-scoped state an agent
run reads and writes, exported as a :class:`ResumableState` and restored from one.

A msgspec Struct, so an application subclasses it the way pai documents (``class MyContext(
AgentContext)`` with extra fields) and points ``state_type`` at its own state class;
:meth:`AgentContext.export_state` then copies every field the two share.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, ClassVar, Final, Self
from uuid import uuid4

import msgspec

from .resumable import ExtraUsageRecord, ResumableState

__all__ = ["AgentContext", "ModelConfig", "ToolConfig"]


class ModelConfig(msgspec.Struct, kw_only=True):
    """What context management needs to know about the model (pai's ``ModelConfig``)."""

    context_window: int | None = None
    has_image_capability: bool = False
    has_video_capability: bool = False
    proactive_context_management_threshold: float | None = 0.5
    compact_threshold: float = 0.90
    max_images: int = 20
    max_videos: int = 1
    support_gif: bool = True

    @property
    def has_vision(self) -> bool:
        """pai 0.16's name for :attr:`has_image_capability`."""
        return self.has_image_capability

    @property
    def has_video_understanding(self) -> bool:
        """pai 0.16's name for :attr:`has_video_capability`."""
        return self.has_video_capability


#: ToolConfig's API keys, each read from the environment variable of its name in capitals.
_KEY_FIELDS: Final = (
    "google_search_api_key",
    "google_search_cx",
    "tavily_api_key",
    "brave_search_api_key",
    "pixabay_api_key",
    "rapidapi_api_key",
    "firecrawl_api_key",
)


class ToolConfig:
    """Tool settings and API keys (pai-agent-sdk's ``ToolConfig``): held by an
    :class:`AgentContext` for its tools, never saved with the state.

    The API keys not given are read from the environment (``TAVILY_API_KEY``...) when the config
    is made, as pai does (pai also reads a ``.env`` file; this does not). Keyword arguments pai
    does not name are kept as attributes (pai's ``extra="allow"``).
    """

    def __init__(
        self,
        *,
        skip_url_verification: bool = True,
        enable_load_document: bool = False,
        image_understanding_model: str | None = None,
        image_understanding_model_settings: dict[str, Any] | None = None,
        video_understanding_model: str | None = None,
        video_understanding_model_settings: dict[str, Any] | None = None,
        image_to_url_hook: Any = None,
        video_to_url_hook: Any = None,
        **extra_data: Any,
    ) -> None:
        self.skip_url_verification = skip_url_verification
        self.enable_load_document = enable_load_document
        self.image_understanding_model = image_understanding_model
        self.image_understanding_model_settings = image_understanding_model_settings
        self.video_understanding_model = video_understanding_model
        self.video_understanding_model_settings = video_understanding_model_settings
        self.image_to_url_hook = image_to_url_hook
        self.video_to_url_hook = video_to_url_hook
        for name in _KEY_FIELDS:
            setattr(self, name, extra_data.pop(name, None) or os.environ.get(name.upper()))
        for name, value in extra_data.items():
            setattr(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        keys = set(_KEY_FIELDS)
        shown = ", ".join(f"{k}={'***' if k in keys and v else repr(v)}" for k, v in vars(self).items())
        return f"ToolConfig({shown})"


def _run_id() -> str:
    return uuid4().hex


class AgentContext(msgspec.Struct, kw_only=True, dict=True):
    """One agent session's state; ``async with`` marks its start and end (entered once at a time).

    ``subagent_history`` maps a subagent's id to its messages in pai's dict shape. The run's
    environment (``env``, or pai's earlier ``file_operator``, ``shell`` and ``resources``, filled
    from ``env`` where not given) and ``tool_config`` are held for the tools and never saved:
    :meth:`export_state` copies only the fields of :attr:`state_type`.
    """

    #: The state class :meth:`export_state` builds (a subclass of ResumableState).
    state_type: ClassVar[type[ResumableState]] = ResumableState

    run_id: str = msgspec.field(default_factory=_run_id)
    parent_run_id: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    model_cfg: ModelConfig = msgspec.field(default_factory=ModelConfig)
    subagent_history: dict[str, list[dict[str, Any]]] = {}
    extra_usages: list[ExtraUsageRecord] = []
    user_prompts: list[str] = []
    steering_messages: list[str] = []
    handoff_message: str | None = None
    deferred_tool_metadata: dict[str, dict[str, Any]] = {}
    agent_registry: dict[str, dict[str, Any]] = {}
    need_user_approve_tools: list[str] = []
    need_user_approve_mcps: list[str] = []
    auto_load_files: list[str] = []
    tasks: dict[str, dict[str, Any]] = {}
    env: Any = None
    file_operator: Any = None
    shell: Any = None
    resources: Any = None
    tool_config: Any = msgspec.field(default_factory=ToolConfig)

    def __post_init__(self) -> None:
        for name in ("file_operator", "shell", "resources"):  # pai derives these from its env
            if getattr(self, name) is None and self.env is not None:
                setattr(self, name, getattr(self.env, name, None))

    def export_state(
        self, *, include_subagent: bool = True, include_extra_usages: bool = False
    ) -> ResumableState:
        """A :attr:`state_type` holding this context's resumable fields (pai's defaults: subagent
        histories in, per-run ``extra_usages`` out unless asked for, for crash recovery)."""
        fields: dict[str, Any] = {}
        for name in self.state_type.__struct_fields__:
            if name in ("subagent_history", "extra_usages") or not hasattr(self, name):
                continue
            value = getattr(self, name)
            fields[name] = value.copy() if isinstance(value, list | dict) else value
        if include_subagent:
            fields["subagent_history"] = {k: list(v) for k, v in self.subagent_history.items()}
        else:
            fields.pop("agent_registry", None)
        if include_extra_usages:
            fields["extra_usages"] = list(self.extra_usages)
        return self.state_type(**fields)

    def with_state(self, state: ResumableState | None) -> Self:
        """Restore ``state`` into this context and return it, for chaining; ``None`` does nothing."""
        if state is not None:
            state.restore(self)
        return self

    def create_subagent_context(
        self, agent_name: str = "", agent_id: str | None = None, **overrides: Any
    ) -> AgentContext:
        """A context for a subagent run: a new run id whose parent is this one, the same model
        config, tool config and environment, everything else fresh (its history belongs in
        ``subagent_history``). Given ``agent_name`` (pai's call form), the subagent is recorded
        in ``agent_registry`` under ``agent_id`` (a new id when not given), as pai does."""
        if agent_name:
            key = agent_id or uuid4().hex[:8]
            parent = self.__dict__.get("_agent_id", "main")
            self.agent_registry.setdefault(
                key, {"agent_id": key, "agent_name": agent_name, "parent_agent_id": parent}
            )
        shared = {
            name: getattr(self, name)
            for name in ("model_cfg", "tool_config", "env", "file_operator", "shell", "resources")
        }
        child = type(self)(parent_run_id=self.run_id, **{**shared, **overrides})
        if agent_name:
            child.__dict__["_agent_id"] = key
        return child

    async def __aenter__(self) -> Self:
        if self.__dict__.get("_entered"):
            raise RuntimeError("this AgentContext is already entered; enter each instance once at a time")
        self.__dict__["_entered"] = True
        self.start_at = datetime.now(UTC)
        self.end_at = None
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.end_at = datetime.now(UTC)
        self.__dict__["_entered"] = False
