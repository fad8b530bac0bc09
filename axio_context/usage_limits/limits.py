"""UsageLimits: pydantic-ai 2.x's limits and checks, with the same names, defaults and messages.

A limit of 0 is accepted as pydantic-ai accepts it (``request_limit=0``: no request may be
made); beyond pydantic-ai, a limit below zero or not a whole number is a :class:`UsageError`
naming it, and :meth:`UsageLimits.check_prompt` is the pre-flight check of a request's counted
prompt tokens, made when ``count_tokens_before_request`` is on (see :class:`.guard.UsageGuard`,
which applies limits to a session's, agent's or project's persisted usage).
"""

from __future__ import annotations

import warnings
from decimal import Decimal
from typing import Final

import msgspec

from .counts import RunUsage, check_count
from .errors import LimitExceeded, UsageError, limit_exceeded

__all__ = ["LIMIT_FIELDS", "UsageLimits"]

#: The integer limits, in pydantic-ai's order (``cost_limit`` is the Decimal one).
LIMIT_FIELDS: Final = (
    "request_limit",
    "tool_calls_limit",
    "input_tokens_limit",
    "output_tokens_limit",
    "total_tokens_limit",
    "per_request_input_tokens_limit",
)


def _exceeded(text: str, name: str, limit: object, value: object) -> LimitExceeded:
    return limit_exceeded(text, limit_name=name, limit=limit, value=value)


class UsageLimits(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Limits on a run's (or with a guard, a session's, agent's or project's) usage; ``None``
    disables one. Checked by the ``check_*`` methods, which raise :class:`UsageLimitExceeded`."""

    cost_limit: Decimal | None = None
    request_limit: int | None = 50
    tool_calls_limit: int | None = None
    input_tokens_limit: int | None = None
    output_tokens_limit: int | None = None
    total_tokens_limit: int | None = None
    per_request_input_tokens_limit: int | None = None
    count_tokens_before_request: bool = False

    def __post_init__(self) -> None:
        for name in LIMIT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, check_count(name, value))  # a whole number >= 0, as pydantic-ai
        if self.cost_limit is not None:
            cost = self.cost_limit
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                cost = Decimal(str(cost))
            if not isinstance(cost, Decimal) or not cost.is_finite() or cost < 0:
                raise UsageError(
                    f"cost_limit must be a Decimal of 0 or more (None for no limit), not {self.cost_limit!r}"
                )
            self.cost_limit = cost
        if not isinstance(self.count_tokens_before_request, bool):
            raise UsageError(
                f"count_tokens_before_request must be a bool, not {self.count_tokens_before_request!r}"
            )

    def has_token_limits(self) -> bool:
        """Whether any token limit is set (else ``check_tokens`` and
        ``check_per_request_input_tokens`` never raise)."""
        return any(
            limit is not None
            for limit in (
                self.input_tokens_limit,
                self.output_tokens_limit,
                self.total_tokens_limit,
                self.per_request_input_tokens_limit,
            )
        )

    def check_before_request(self, usage: RunUsage) -> None:
        """Raise if the next request would exceed a limit (requests, input, total tokens, cost)."""
        limit = self.request_limit
        if limit is not None and usage.requests >= limit:
            raise _exceeded(
                f"The next request would exceed the request_limit of {limit}",
                "request_limit",
                limit,
                usage.requests,
            )
        input_tokens = usage.input_tokens
        if self.input_tokens_limit is not None and input_tokens > self.input_tokens_limit:
            raise _exceeded(
                f"The next request would exceed the input_tokens_limit of {self.input_tokens_limit} "
                f"({input_tokens=})",
                "input_tokens_limit",
                self.input_tokens_limit,
                input_tokens,
            )
        total_tokens = usage.total_tokens
        if self.total_tokens_limit is not None and total_tokens > self.total_tokens_limit:
            raise _exceeded(
                f"The next request would exceed the total_tokens_limit of {self.total_tokens_limit} "
                f"({total_tokens=})",
                "total_tokens_limit",
                self.total_tokens_limit,
                total_tokens,
            )
        cost = usage.cost
        if cost is not None and self.cost_limit is not None and cost > self.cost_limit:
            raise _exceeded(
                f"The next request would exceed the `cost_limit` of {self.cost_limit} (`cost`={cost!r})",
                "cost_limit",
                self.cost_limit,
                cost,
            )

    def check_cost(self, usage: RunUsage, *, warn_if_cost_unavailable: bool = True) -> None:
        """Raise if the usage's cost exceeds ``cost_limit``; warn (as pydantic-ai) when a cost
        limit is set and no cost is known."""
        unknown = self.cost_limit is not None and usage.cost is None and not usage.unmeasured_requests
        if warn_if_cost_unavailable and unknown:
            warnings.warn(
                "A `cost_limit` is set but cannot be enforced because no cost was recorded for this usage",
                UserWarning,
                stacklevel=2,
            )
        if usage.cost is not None and self.cost_limit is not None and usage.cost > self.cost_limit:
            raise _exceeded(
                f"Exceeded the `cost_limit` of {self.cost_limit} (`usage.cost`={usage.cost!r})",
                "cost_limit",
                self.cost_limit,
                usage.cost,
            )

    def check_tokens(self, usage: RunUsage) -> None:
        """Raise if the usage exceeds a token limit (input, output, total)."""
        for name, value in (
            ("input_tokens", usage.input_tokens),
            ("output_tokens", usage.output_tokens),
            ("total_tokens", usage.total_tokens),
        ):
            limit = getattr(self, name + "_limit")
            if limit is not None and value > limit:
                raise _exceeded(
                    f"Exceeded the {name}_limit of {limit} ({name}={value})", name + "_limit", limit, value
                )

    def check_before_tool_call(self, projected_usage: RunUsage) -> None:
        """Raise if the tool calls of ``projected_usage`` (the usage with the next calls counted)
        exceed ``tool_calls_limit``."""
        limit = self.tool_calls_limit
        tool_calls = projected_usage.tool_calls
        if limit is not None and tool_calls > limit:
            raise _exceeded(
                f"The next tool call(s) would exceed the tool_calls_limit of {limit} ({tool_calls=}).",
                "tool_calls_limit",
                limit,
                tool_calls,
            )

    def check_per_request_input_tokens(self, request_input_tokens: int) -> None:
        """Raise if one request's input tokens exceed ``per_request_input_tokens_limit``."""
        limit = self.per_request_input_tokens_limit
        if limit is not None and request_input_tokens > limit:
            raise _exceeded(
                f"Exceeded the per_request_input_tokens_limit of {limit} ({request_input_tokens=})",
                "per_request_input_tokens_limit",
                limit,
                request_input_tokens,
            )

    def check_prompt(self, usage: RunUsage, prompt_tokens: int) -> None:
        """The pre-flight check: raise if sending a prompt of ``prompt_tokens`` (counted before
        the request) would cross the per-request, input or total token limit given ``usage``."""
        prompt_tokens = check_count("prompt_tokens", prompt_tokens)
        limit = self.per_request_input_tokens_limit
        if limit is not None and prompt_tokens > limit:
            raise _exceeded(
                f"The next request would exceed the per_request_input_tokens_limit of {limit} "
                f"(prompt_tokens={prompt_tokens})",
                "per_request_input_tokens_limit",
                limit,
                prompt_tokens,
            )
        for name, before in (("input_tokens", usage.input_tokens), ("total_tokens", usage.total_tokens)):
            limit = getattr(self, name + "_limit")
            if limit is not None and before + prompt_tokens > limit:
                raise _exceeded(
                    f"The next request would exceed the {name}_limit of {limit} "
                    f"({name}={before} + prompt_tokens={prompt_tokens})",
                    name + "_limit",
                    limit,
                    before + prompt_tokens,
                )
