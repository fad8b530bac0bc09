"""openai-agents' ``Session`` over axio-context (``pip install 'axio-context[openai-agents]'``)."""

from __future__ import annotations

from .advanced import AxioAdvancedSession
from .items import ITEM_KEY, ItemError, item_of, message_of
from .session import ADAPTER, AxioContextSession

__all__ = [
    "ADAPTER",
    "ITEM_KEY",
    "AxioAdvancedSession",
    "AxioContextSession",
    "ItemError",
    "item_of",
    "message_of",
]
