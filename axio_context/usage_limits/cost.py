"""Cost of a request from genai-prices (the ``cost`` extra), never a price table of ours.

genai-prices ships its price snapshot inside the package, so pricing works offline; a model it
does not know gives ``None`` (unknown), as in pydantic-ai. Imported only when called. Reading a
response's usage (:func:`extract_request_usage`) lives with :class:`RequestUsage` in ``counts``,
whose ``extract`` calls it; it is re-exported here.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from .counts import RequestUsage, UsageExtractionFailedWarning, extract_request_usage

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
