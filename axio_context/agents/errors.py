"""Errors of the agent runtime layer."""

from __future__ import annotations

from ..errors import AxioContextError

__all__ = ["AgentRuntimeError", "RunSessionError"]


class AgentRuntimeError(AxioContextError):
    """Base class of the agent runtime layer's errors."""


class RunSessionError(AgentRuntimeError, ValueError):
    """A run id already used in another session (run_id names one run of one session)."""
