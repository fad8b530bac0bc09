"""Cost from genai-prices: offline, from the snapshot the package ships."""

from __future__ import annotations

from decimal import Decimal

from axio_context.usage_limits import RequestUsage
from axio_context.usage_limits.cost import price_request


def test_a_known_model_is_priced_offline() -> None:
    cheap = price_request(RequestUsage(input_tokens=1000, output_tokens=100), "gpt-4o", provider="openai")
    dear = price_request(RequestUsage(input_tokens=2000, output_tokens=200), "gpt-4o", provider="openai")
    assert isinstance(cheap, Decimal) and cheap > 0
    assert dear == 2 * cheap


def test_an_unknown_model_has_no_cost() -> None:
    assert price_request(RequestUsage(input_tokens=1000), "no-such-model-anywhere-42") is None
