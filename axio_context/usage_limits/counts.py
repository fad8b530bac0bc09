"""RequestUsage and RunUsage: pydantic-ai 2.x's usage figures, field for field, as msgspec Structs.

A request's usage is what one model call cost; a run's is the sum over its requests plus the
number of requests and tool calls. Counts are whole numbers >= 0, checked when built (so a
usage parsed from a provider's JSON as ``10.0`` becomes ``10`` and ``-1`` or ``1.5`` is a
:class:`UsageError` naming the field). ``extra`` keeps the provider-specific counters
pydantic-ai keeps as ad-hoc attributes (``web_searches``...), so a round trip loses nothing.
Token buckets nest as in pydantic-ai: cache and audio input tokens are included in
``input_tokens``, reasoning and audio output tokens in ``output_tokens``. A provider
response's usage is read by genai-prices (:func:`extract_request_usage`, imported only when
called), here beside the struct whose ``extract`` it is.
"""

from __future__ import annotations

import math
import operator
import warnings
from copy import copy
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar, Final, Self, SupportsIndex, cast

import msgspec

from ..usage import MAX_TOKENS
from .errors import UsageError

__all__ = [
    "COUNT_FIELDS",
    "RequestUsage",
    "RunUsage",
    "UsageExtractionFailedWarning",
    "check_count",
    "extract_request_usage",
]

#: The integer counts every usage has, in pydantic-ai's order (``audio_seconds``, ``details``,
#: ``cost`` and ``extra`` are the other figures).
COUNT_FIELDS: Final = (
    "input_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "cache_read_tokens",
    "output_tokens",
    "unmeasured_requests",
    "output_reasoning_tokens",
    "input_audio_tokens",
    "cache_audio_read_tokens",
    "output_audio_tokens",
)


def check_count(name: str, value: object) -> int:
    """``value`` as an int in ``0 .. MAX_TOKENS`` (a whole float is accepted), else
    :class:`UsageError` naming ``name``."""
    if type(value) is int and 0 <= value <= MAX_TOKENS:
        return value
    count: int | None
    if isinstance(value, bool):
        count = None
    elif isinstance(value, float):
        count = int(value) if value.is_integer() else None
    else:
        try:
            count = operator.index(cast(SupportsIndex, value))
        except TypeError:
            count = None
    if count is None:
        raise UsageError(f"{name} must be a whole number, not {value!r}")
    if not 0 <= count <= MAX_TOKENS:
        raise UsageError(f"{name} must be between 0 and {MAX_TOKENS}, not {count}")
    return count


def _check_number(name: str, value: object) -> float | int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise UsageError(f"{name} must be a finite number >= 0, not {value!r}")
    return value


class _Usage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The figures a request's and a run's usage share (pydantic-ai's ``UsageBase``)."""

    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    unmeasured_requests: int = 0
    output_reasoning_tokens: int = 0
    input_audio_tokens: int = 0
    cache_audio_read_tokens: int = 0
    output_audio_tokens: int = 0
    audio_seconds: float = 0
    details: dict[str, int] = msgspec.field(default_factory=dict)
    cost: Decimal | None = None
    #: Provider-specific counters beyond pydantic-ai's fields (its ad-hoc attributes).
    extra: dict[str, int | float] = msgspec.field(default_factory=dict)

    _COUNTS: ClassVar[tuple[str, ...]] = COUNT_FIELDS

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> Self:
        """Check (and normalise to ints) every figure; :class:`UsageError` names a bad one.

        Runs when built; a store runs it again before writing, since fields can be assigned.
        """
        for name in self._COUNTS:
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value <= MAX_TOKENS:  # else as it is: the usual case
                setattr(self, name, check_count(name, value))
        audio = self.audio_seconds
        if audio or type(audio) not in (int, float):
            self.audio_seconds = _check_number("audio_seconds", audio)
        if not isinstance(self.details, dict):
            raise UsageError(f"details must be a dict of str to int, not {self.details!r}")
        if self.details:
            self.details = {str(k): check_count(f"details[{k!r}]", v) for k, v in self.details.items()}
        if not isinstance(self.extra, dict):
            raise UsageError(f"extra must be a dict of str to numbers, not {self.extra!r}")
        if self.extra:
            self.extra = {str(k): _check_number(f"extra[{k!r}]", v) for k, v in self.extra.items()}
        if self.cost is not None:
            cost = self.cost if isinstance(self.cost, Decimal) else _decimal(self.cost)
            if not cost.is_finite() or cost < 0:
                raise UsageError(f"cost must be a finite Decimal >= 0 or None, not {self.cost!r}")
            self.cost = cost
        return self

    def __copy__(self) -> Self:
        new = msgspec.structs.replace(self)
        new.details = dict(self.details)
        new.extra = dict(self.extra)
        return new

    @property
    def total_tokens(self) -> int:
        """Sum of ``input_tokens + output_tokens``."""
        return self.input_tokens + self.output_tokens

    @property
    def cache_hit_ratio(self) -> float:
        """Fraction of input tokens read from the provider's prompt cache (0.0 without input)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    def opentelemetry_attributes(self) -> dict[str, int]:
        """The token counts as OpenTelemetry ``gen_ai.usage.*`` attributes (as pydantic-ai)."""
        result: dict[str, int] = {}
        if self.input_tokens:
            result["gen_ai.usage.input_tokens"] = self.input_tokens
        if self.output_tokens:
            result["gen_ai.usage.output_tokens"] = self.output_tokens
        details = dict(self.details)
        if self.cache_write_tokens:
            result["gen_ai.usage.cache_creation.input_tokens"] = self.cache_write_tokens
            details["cache_write_tokens"] = self.cache_write_tokens
        if self.cache_read_tokens:
            result["gen_ai.usage.cache_read.input_tokens"] = self.cache_read_tokens
            details["cache_read_tokens"] = self.cache_read_tokens
        for name in ("input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens"):
            if getattr(self, name):
                details[name] = getattr(self, name)
        for key, value in details.items():
            if key not in ("input_tokens", "output_tokens"):
                result["gen_ai.usage.details." + key] = value
        return result

    def has_values(self) -> bool:
        """Whether any figure (counts, details, cost) is set and non-zero; ``unmeasured_requests``
        is not a figure (it records that a response omitted usage)."""
        if any(self.details.values()) or any(self.extra.values()) or self.cost or self.audio_seconds:
            return True
        # _COUNTS holds a run's requests and tool_calls; a request's `requests` (always 1) is none.
        return any(getattr(self, n) for n in self._COUNTS if n != "unmeasured_requests")

    def _add(self, other: _Usage, sign: int) -> None:
        for name in COUNT_FIELDS:
            setattr(self, name, getattr(self, name) + sign * getattr(other, name))
        self.audio_seconds += sign * other.audio_seconds
        for key, value in other.details.items():
            self.details[key] = self.details.get(key, 0) + sign * value
        for key, number in other.extra.items():
            self.extra[key] = self.extra.get(key, 0) + sign * number


def _decimal(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except ArithmeticError:
        raise UsageError(f"cost must be a Decimal or None, not {value!r}") from None


class RequestUsage(_Usage, kw_only=True, omit_defaults=True):
    """The usage of one model request (pydantic-ai's ``RequestUsage``)."""

    @classmethod
    def extract(
        cls,
        data: Any,
        *,
        provider: str,
        provider_url: str,
        provider_fallback: str,
        api_flavor: str = "default",
        details: dict[str, Any] | None = None,
    ) -> RequestUsage:
        """A provider response's usage read by genai-prices (pydantic-ai's ``extract``; needs the
        ``cost`` extra): see :func:`extract_request_usage`."""
        return extract_request_usage(
            data,
            provider=provider,
            provider_url=provider_url,
            provider_fallback=provider_fallback,
            api_flavor=api_flavor,
            details=details,
        )

    @property
    def requests(self) -> int:
        """Always 1: this is one request's usage."""
        return 1

    def incr(self, incr_usage: RequestUsage) -> None:
        """Add another part of the same response's usage, in place."""
        self._add(incr_usage, 1)
        if incr_usage.cost is not None:
            self.cost = (self.cost or 0) + incr_usage.cost

    def __add__(self, other: RequestUsage) -> RequestUsage:
        """The sum of two parts of one response's usage (to sum requests, use :class:`RunUsage`)."""
        new = copy(self)
        new.incr(other)
        return new


class RunUsage(_Usage, kw_only=True, omit_defaults=True):
    """The usage of a run: its requests' figures summed, plus requests and tool calls
    (pydantic-ai's ``RunUsage``)."""

    requests: int = 0
    tool_calls: int = 0

    _COUNTS: ClassVar[tuple[str, ...]] = (*COUNT_FIELDS, "requests", "tool_calls")

    def incr(self, incr_usage: RunUsage | RequestUsage) -> None:
        """Add a request's or another run's usage, in place (a request adds no ``requests``:
        pydantic-ai counts those itself, as we do when recording)."""
        if isinstance(incr_usage, RunUsage):
            self.requests += incr_usage.requests
            self.tool_calls += incr_usage.tool_calls
        self._add(incr_usage, 1)
        if incr_usage.cost is not None:
            self.cost = (self.cost or 0) + incr_usage.cost

    def __add__(self, other: RunUsage | RequestUsage) -> RunUsage:
        """The sum of two usages, as a new :class:`RunUsage`."""
        new = copy(self)
        new.incr(other)
        return new

    def __sub__(self, other: RunUsage) -> RunUsage:
        """The usage accumulated since ``other`` (a snapshot of this run taken earlier). An
        unknown or unchanged cost gives ``None``, as in pydantic-ai."""
        new = copy(self)
        new._add(other, -1)
        new.requests = self.requests - other.requests
        new.tool_calls = self.tool_calls - other.tool_calls
        new.cost = (
            self.cost - (other.cost or 0) if self.cost is not None and self.cost != other.cost else None
        )
        return new


class UsageExtractionFailedWarning(UserWarning):
    """genai-prices could not read a response's usage; the usage returned holds no counts."""


def extract_request_usage(
    data: Any,
    *,
    provider: str,
    provider_url: str,
    provider_fallback: str,
    api_flavor: str = "default",
    details: dict[str, Any] | None = None,
) -> RequestUsage:
    """pydantic-ai's ``RequestUsage.extract``: a response's usage read by genai-prices.

    The provider is looked up by its API URL, then its id, then the fallback id (most specific
    first, as pydantic-ai); a cost a gateway wrote into the response's ``usage`` is kept. When no
    lookup reads the usage, a :class:`UsageExtractionFailedWarning` says why (if one failed) and
    the usage has only ``details`` and that cost.
    """
    try:
        from genai_prices.data_snapshot import get_snapshot
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise ImportError("extracting usage needs the extra: pip install 'axio-context[cost]'") from exc
    cost = _gateway_cost(data)
    failure: Exception | None = None
    references = ((None, provider_url), (provider, None), (provider_fallback, None))
    for provider_id, api_url in references:
        if not (provider_id or api_url):
            continue
        try:
            found = get_snapshot().find_provider(None, provider_id, api_url)
        except LookupError:
            continue
        except Exception as exc:  # genai-prices' own error, whatever its type
            failure = exc
            continue
        try:
            _model, extracted = found.extract_usage(data, api_flavor=api_flavor)
        except Exception as exc:
            failure = exc
            continue
        figures = {k: v for k, v in vars(extracted).items() if v is not None}
        known = {k: v for k, v in figures.items() if k in RequestUsage.__struct_fields__}
        extra = {k: v for k, v in figures.items() if k not in known}
        return RequestUsage(**known, extra=extra, details=dict(details or {}), cost=cost)
    if failure is not None:
        warnings.warn(
            f"Failed to extract usage with `genai-prices`: {type(failure).__name__}: {failure}",
            UsageExtractionFailedWarning,
            stacklevel=3,
        )
    return RequestUsage(details=dict(details or {}), cost=cost)


def _gateway_cost(data: Any) -> Decimal | None:
    """The cost a gateway put in the response's ``usage`` (``logfire_ai_gateway.cost``, or the
    older ``pydantic_ai_gateway.cost_estimate``), if any: a decimal string or a number >= 0."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None
    for block_name, field_name in (("logfire_ai_gateway", "cost"), ("pydantic_ai_gateway", "cost_estimate")):
        block = usage.get(block_name)
        value = block.get(field_name) if isinstance(block, dict) else None
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            try:
                cost = Decimal(str(value))
            except InvalidOperation:
                continue
            if cost.is_finite() and cost >= 0:
                return cost
    return None
