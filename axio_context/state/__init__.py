"""Resumable agent state with pai-agent-sdk's names: :class:`ResumableState` (subclassable, JSON
round trips keeping unknown fields), :class:`ExtraUsageRecord`, :class:`ModelConfig` and the
:class:`AgentContext` that exports and restores it (its :class:`ToolConfig` and environment are
held, not saved). ``axio_context_sqlite.state`` persists it with its session, subagent histories
as child sessions.
"""

from .agent import AgentContext, ModelConfig, ToolConfig
from .errors import StateDecodeError, StateEncodeError, StateError
from .history import message_dict_of, message_of
from .resumable import ExtraUsageRecord, ResumableState, RunUsage, state_type_name

__all__ = [
    "AgentContext",
    "ExtraUsageRecord",
    "ModelConfig",
    "ResumableState",
    "RunUsage",
    "StateDecodeError",
    "StateEncodeError",
    "StateError",
    "ToolConfig",
    "message_dict_of",
    "message_of",
    "state_type_name",
]
