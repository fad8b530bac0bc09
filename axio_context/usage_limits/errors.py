"""The named errors of usage and limits.

:class:`UsageError` is bad input (a count that is negative or not whole, a limit of zero or
below, a run id reused in another session), raised before anything is written;
:class:`UsageLimitExceeded` (pydantic-ai's name) is a limit that refused the next step.
"""

from __future__ import annotations

from axio_context.errors import AxioContextError

__all__ = ["UsageError", "UsageLimitExceeded"]


class UsageError(AxioContextError, ValueError):
    """Usage figures, limits or a record refused; the text names the field. Nothing was written."""


class UsageLimitExceeded(AxioContextError):
    """A usage limit refused the next request or tool call; ``limit_name``, ``limit`` and
    ``value`` say which limit and the figure that crossed it, ``scope`` whose usage it was."""

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
