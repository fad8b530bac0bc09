"""The named errors of usage and limits.

:class:`UsageError` is bad input (a count that is negative or not whole, a limit below zero,
a run id reused in another session), raised before anything is written;
:class:`UsageLimitExceeded` (pydantic-ai's name) is a limit that refused the next step.

Where pydantic-ai is installed, :class:`UsageLimitExceeded` is also a subclass of
``pydantic_ai.exceptions.UsageLimitExceeded``, so ``except`` clauses written for pydantic-ai
catch ours. Importing pydantic-ai takes over a second, so the class is built on first use of the
name (or the first limit that refuses), never when this module loads: ``UsageLimitExceeded`` is
resolved by the module's ``__getattr__``, once, and is the same class from then on.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from axio_context.errors import AxioContextError

__all__ = ["LimitExceeded", "UsageError", "UsageLimitExceeded", "limit_exceeded"]


class UsageError(AxioContextError, ValueError):
    """Usage figures, limits or a record refused; the text names the field. Nothing was written."""


class LimitExceeded(AxioContextError):
    """What every :class:`UsageLimitExceeded` is, with or without pydantic-ai: a usage limit
    refused the next request or tool call; ``limit_name``, ``limit`` and ``value`` say which limit
    and the figure that crossed it, ``scope`` whose usage it was."""

    def __init__(
        self,
        message: str,
        *,
        limit_name: str = "",
        limit: object = None,
        value: object = None,
        scope: str = "",
    ) -> None:
        super().__init__(message)
        self.limit_name = limit_name
        self.limit = limit
        self.value = value
        self.scope = scope

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def add_scope(self, scope: str) -> None:
        """Say whose usage crossed the limit (``... for session 's'``), once."""
        if self.scope:
            return
        self.scope = scope
        self.args = (f"{self.args[0]} for {scope}", *self.args[1:])
        if hasattr(self, "message"):  # pydantic-ai's attribute for the text
            self.message = self.args[0]


@functools.cache
def exceeded_class() -> type[LimitExceeded]:
    """The class :data:`UsageLimitExceeded` names: :class:`LimitExceeded` and, where pydantic-ai is
    installed, its ``UsageLimitExceeded`` too (imported here, guarded, the first time only)."""
    bases: tuple[type, ...] = (LimitExceeded,)
    namespace: dict[str, Any] = {"__doc__": LimitExceeded.__doc__, "__module__": __name__}
    try:
        from pydantic_ai.exceptions import UsageLimitExceeded as theirs
    except ImportError:
        pass
    else:
        bases = (LimitExceeded, theirs)
        # pydantic-ai appends a hint to the message unless the hint is already in it; ours is
        # complete, and "" is in every message.
        namespace["_HINT"] = ""
    built = type("UsageLimitExceeded", bases, namespace)
    return built


def limit_exceeded(text: str, **fields: Any) -> LimitExceeded:
    """A :data:`UsageLimitExceeded` saying ``text`` (``fields``: limit_name, limit, value, scope)."""
    return exceeded_class()(text, **fields)


if TYPE_CHECKING:
    UsageLimitExceeded = LimitExceeded
else:

    def __getattr__(name: str) -> Any:
        if name == "UsageLimitExceeded":
            return exceeded_class()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
