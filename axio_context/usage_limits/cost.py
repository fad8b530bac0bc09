"""Cost and usage of a request from genai-prices (the ``cost`` extra), never a price table of ours.

genai-prices ships its price snapshot inside the package, so pricing works offline; a model it
does not know gives ``None`` (unknown), as in pydantic-ai. Imported only when called.
"""

from __future__ import annotations

import warnings
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from .counts import RequestUsage

__all__ = ["UsageExtractionFailedWarning", "extract_request_usage", "price_request"]


def price_request(
    usage: RequestUsage, model: str, *, provider: str | None = None, at: datetime | None = None
) -> Decimal | None:
    """The cost in USD of one request's ``usage`` with ``model`` (of ``provider``), or ``None``
    when genai-prices does not know the model; set it as ``usage.cost`` before recording."""
    try:
        from genai_prices import calc_price
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise ImportError("pricing needs the extra: pip install 'axio-context[cost]'") from exc
    try:
        result = calc_price(usage, model, provider_id=provider, genai_request_timestamp=at)
    except LookupError:
        return None
    return Decimal(result.total_price)


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
