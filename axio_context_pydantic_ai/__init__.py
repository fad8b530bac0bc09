"""pydantic-ai over axio-context (``pip install 'axio-context[pydantic-ai]'``): a
``ConversationStore``, ``message_history=`` helpers, and our compaction as a history capability."""

from __future__ import annotations

from .compaction import compact_history, history_processor
from .history import load_messages, load_messages_json, save_messages, save_messages_json
from .messages import JSON_KEY, MessageJSONError, UnknownPartError, model_message, native_message
from .store import ADAPTER, AxioConversationStore

__all__ = [
    "ADAPTER",
    "JSON_KEY",
    "AxioConversationStore",
    "MessageJSONError",
    "UnknownPartError",
    "compact_history",
    "history_processor",
    "load_messages",
    "load_messages_json",
    "model_message",
    "native_message",
    "save_messages",
    "save_messages_json",
]
