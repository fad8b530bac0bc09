"""The resumable state's errors (subclasses of the package's base, so one ``except`` catches all)."""

from __future__ import annotations

from ..errors import AxioContextError, DecodeError

__all__ = ["StateDecodeError", "StateEncodeError", "StateError"]


class StateError(AxioContextError):
    """Base class of the resumable state's errors."""


class StateDecodeError(StateError, DecodeError):
    """A stored or given state does not decode into the requested state type; the text names the field."""


class StateEncodeError(StateError, TypeError):
    """A state holds a value that cannot be encoded (the text names the field or subagent message)."""
