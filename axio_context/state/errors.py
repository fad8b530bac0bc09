"""The resumable state's errors (subclasses of the package's base, so one ``except`` catches all).

pai-agent-sdk documents pydantic's validation on load, so pai code catches
``pydantic.ValidationError``. Where pydantic is installed (it is wherever pai is), a state that
does not load raises a :class:`StateDecodeError` that is also a ``pydantic.ValidationError``
(:func:`decode_error`): both ``except`` clauses catch it. pydantic is imported the first time such
an error is raised, never when this module loads.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from ..errors import AxioContextError, DecodeError

__all__ = ["StateDecodeError", "StateEncodeError", "StateError", "decode_error"]


class StateError(AxioContextError):
    """Base class of the resumable state's errors."""


class StateDecodeError(StateError, DecodeError):
    """A stored or given state does not decode into the requested state type; the text names the field."""


class StateEncodeError(StateError, TypeError):
    """A state holds a value that cannot be encoded (the text names the field or subagent message)."""


@functools.cache
def _with_pydantic() -> Any:
    """StateDecodeError that is also pydantic's ValidationError, or None without pydantic."""
    try:  # by name: pydantic is optional here
        validation_error = importlib.import_module("pydantic_core").ValidationError
    except ImportError:
        return None

    def __str__(self: Any) -> str:
        return str(self.__dict__.get("text", ""))

    def __reduce__(self: Any) -> tuple[Any, tuple[str, str]]:
        return decode_error, (str(self), self.title)

    namespace = {
        "__module__": __name__,
        "__doc__": StateDecodeError.__doc__,
        "__str__": __str__,
        "__reduce__": __reduce__,
    }
    return type("StateDecodeError", (StateDecodeError, validation_error), namespace)


def decode_error(text: str, title: str) -> StateDecodeError:
    """A :class:`StateDecodeError` saying ``text``; where pydantic is installed, also a
    ``pydantic.ValidationError`` titled ``title`` (the state class) with one ``value_error``."""
    flavoured = _with_pydantic()
    if flavoured is None:
        return StateDecodeError(text)
    line = {"type": "value_error", "loc": (), "input": None, "ctx": {"error": text}}
    error: StateDecodeError = flavoured.from_exception_data(title, [line])
    error.__dict__["text"] = text
    return error
