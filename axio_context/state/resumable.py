"""ResumableState: what an agent needs to come back as it was (pai-agent-sdk's names and shape).

A msgspec Struct, so subclasses add fields the way pai documents it (``class MyState(
ResumableState)`` with extra fields and a ``restore`` that calls ``super().restore(ctx)``), and a
JSON round trip of a subclass keeps them. Fields this code does not know (a state written by a
newer version, or by a subclass loaded as its base) are kept beside the instance and written
back by :meth:`ResumableState.to_json`, never dropped.
"""

from __future__ import annotations

from functools import cache
from typing import Any, ClassVar, Final, Self

import msgspec

from ..usage_limits.counts import RunUsage  # the one RunUsage, pydantic-ai's fields
from .errors import StateEncodeError, decode_error

__all__ = ["ExtraUsageRecord", "ResumableState", "RunUsage", "state_type_name"]


class ExtraUsageRecord(msgspec.Struct, kw_only=True):
    """Usage spent outside the main run (a subagent, a filter, a tool calling a model), as in pai."""

    uuid: str
    agent: str
    model_id: str
    usage: RunUsage = msgspec.field(default_factory=RunUsage)


_RAW: Final = msgspec.json.Decoder(dict[str, Any])
_ENCODER: Final = msgspec.json.Encoder()


@cache
def _known(cls: type[ResumableState]) -> frozenset[str]:
    return frozenset(cls.__struct_fields__)


def state_type_name(cls: type[ResumableState]) -> str:
    """``module.QualName`` of a state class: recorded with a saved state, shown by the CLI."""
    return f"{cls.__module__}.{cls.__qualname__}"


class ResumableState(msgspec.Struct, kw_only=True, dict=True):
    """Resumable session state of an agent context (pai-agent-sdk's ``ResumableState``).

    ``subagent_history`` keeps pai's shape (agent id -> that subagent's messages as dicts, as
    pydantic-ai's ``ModelMessagesTypeAdapter.dump_python(mode="json")`` gives them); stored by
    ``axio_context_sqlite.state.save_state`` each becomes a session of its own.
    """

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

    #: The context attributes :meth:`restore` copies; subclasses add theirs in their own restore.
    restored_fields: ClassVar[tuple[str, ...]] = (
        "extra_usages",
        "user_prompts",
        "steering_messages",
        "handoff_message",
        "deferred_tool_metadata",
        "agent_registry",
        "need_user_approve_tools",
        "need_user_approve_mcps",
        "auto_load_files",
        "tasks",
    )

    def restore(self, ctx: Any) -> None:
        """Apply this state to ``ctx`` (an :class:`~axio_context.state.AgentContext`).

        Typed ``Any`` so that a subclass's override may take its own context type, exactly as
        pai's example writes it, and still type-check.
        """
        ctx.subagent_history = {k: list(v) for k, v in self.subagent_history.items()}
        for name in self.restored_fields:
            value = getattr(self, name)
            setattr(ctx, name, value.copy() if isinstance(value, list | dict) else value)

    # -- unknown fields ---------------------------------------------------------------------------

    @property
    def unknown_fields(self) -> dict[str, Any]:
        """Fields the data had that this class does not declare, kept to be written back."""
        found: dict[str, Any] = self.__dict__.get("_unknown", {})
        return found

    # -- dicts and JSON ---------------------------------------------------------------------------

    def to_dict(self, *, subagents: bool = True) -> dict[str, Any]:
        """The state as JSON-ready builtins: every declared field, then the unknown ones kept
        (``subagents=False`` leaves out ``subagent_history``, which a save stores as sessions)."""
        out: dict[str, Any] = {}
        for name in self.__struct_fields__:
            if name == "subagent_history" and not subagents:
                continue
            try:
                out[name] = msgspec.to_builtins(getattr(self, name))
            except (TypeError, ValueError, OverflowError) as exc:
                raise StateEncodeError(f"{type(self).__name__}.{name} cannot be encoded: {exc}") from None
        for name, value in self.unknown_fields.items():
            out.setdefault(name, value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Validate ``data`` into this class; defaults fill what is missing, unknown keys are kept."""
        if not isinstance(data, dict):
            kind = type(data).__name__
            raise decode_error(f"a {cls.__name__} must be a JSON object, got {kind}", cls.__name__)
        known = _known(cls)
        given = {k: v for k, v in data.items() if k in known}
        prompts = given.get("user_prompts")
        # pai types user_prompts as `str | Sequence[UserContent] | None`: its states load here too.
        if prompts is None and "user_prompts" in given:
            del given["user_prompts"]
        elif isinstance(prompts, str):
            given["user_prompts"] = [prompts]
        try:
            state = msgspec.convert(given, cls)
        except msgspec.ValidationError as exc:
            raise decode_error(f"{cls.__name__}: {exc}", cls.__name__) from None
        unknown = {k: v for k, v in data.items() if k not in known}
        if unknown:
            state.__dict__["_unknown"] = unknown
        return state

    def to_json(self, *, indent: int | None = None) -> str:
        """JSON text of :meth:`to_dict` (``indent`` spaces per level when given)."""
        try:
            raw = _ENCODER.encode(self.to_dict())
        except (TypeError, ValueError, OverflowError) as exc:
            raise StateEncodeError(f"{type(self).__name__} cannot be encoded: {exc}") from None
        if indent is not None:
            raw = msgspec.json.format(raw, indent=indent)
        return raw.decode()

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        """Inverse of :meth:`to_json`; a subclass's extra fields come back, unknown ones are kept."""
        try:
            raw = _RAW.decode(data)
        except msgspec.DecodeError as exc:
            raise decode_error(f"{cls.__name__}: not a JSON object ({exc})", cls.__name__) from None
        return cls.from_dict(raw)

    # pai (pydantic) spellings, so code ported from pai-agent-sdk runs unchanged.

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """pydantic's name for :meth:`to_json`."""
        return self.to_json(indent=indent)

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> Self:
        """pydantic's name for :meth:`from_json`."""
        return cls.from_json(data)

    def model_dump(self) -> dict[str, Any]:
        """pydantic's name for :meth:`to_dict`."""
        return self.to_dict()

    @classmethod
    def model_validate(cls, data: dict[str, Any]) -> Self:
        """pydantic's name for :meth:`from_dict`."""
        return cls.from_dict(data)
