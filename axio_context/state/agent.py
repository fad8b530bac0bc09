"""The agent context (pai-agent-sdk's ``AgentContext`` names): the session-scoped state an agent
run reads and writes, exported as a :class:`ResumableState` and restored from one.

A msgspec Struct, so an application subclasses it the way pai documents (``class MyContext(
AgentContext)`` with extra fields) and points ``state_type`` at its own state class;
:meth:`AgentContext.export_state` then copies every field the two share.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import TracebackType
from typing import Any, ClassVar, Self
from uuid import uuid4

import msgspec

from .resumable import ExtraUsageRecord, ResumableState

__all__ = ["AgentContext", "ModelConfig"]


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


def _run_id() -> str:
    return uuid4().hex


class AgentContext(msgspec.Struct, kw_only=True, dict=True):
    """One agent session's state; ``async with`` marks its start and end (entered once at a time).

    ``subagent_history`` maps a subagent's id to its messages in pai's dict shape.
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

    def create_subagent_context(self, **overrides: Any) -> AgentContext:
        """A context for a subagent run: a new run id whose parent is this one, the same model
        config, and everything else fresh (its history belongs in ``subagent_history``)."""
        return type(self)(parent_run_id=self.run_id, model_cfg=self.model_cfg, **overrides)

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
