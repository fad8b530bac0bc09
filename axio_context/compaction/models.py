"""Context windows of well-known models, for sizing token budgets from a model name.

Names match exactly or by the longest known prefix, after dropping a router prefix
(``openai/``, ``anthropic/``...) and an Ollama tag (``llama3.1:8b`` is ``llama3.1``), so dated
snapshots such as ``gpt-4o-2024-08-06`` resolve to their family. Pass a window explicitly for
anything not listed; the table is a convenience, not an authority.
"""

from __future__ import annotations

from typing import Final

from ..errors import UnknownModelError

__all__ = ["DEFAULT_CONTEXT_WINDOW", "MODEL_CONTEXT_WINDOWS", "context_window_for"]

#: What axio assumes when a model does not say (``transport.model.context_window``).
DEFAULT_CONTEXT_WINDOW: Final = 128_000

#: Tokens of context per model family, as published by each provider.
MODEL_CONTEXT_WINDOWS: Final[dict[str, int]] = {
    # OpenAI
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    # Anthropic
    "claude-3-haiku": 200_000,
    "claude-3-sonnet": 200_000,
    "claude-3-opus": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    # Google
    "gemini-1.5-flash": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    # Open-weight models as local servers (Ollama, llama.cpp, vLLM) name them
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "mistral": 32_768,
    "mixtral": 32_768,
    "qwen2.5": 32_768,
    "gemma2": 8_192,
}


def context_window_for(model: str, default: int | None = None) -> int:
    """The context window of ``model``; ``default`` when unknown, or :class:`UnknownModelError`."""
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1].split(":", 1)[0]
    if name in MODEL_CONTEXT_WINDOWS:
        return MODEL_CONTEXT_WINDOWS[name]
    best = ""
    for known in MODEL_CONTEXT_WINDOWS:
        if name.startswith(known) and len(known) > len(best) and name[len(known)] in "-_@ ":
            best = known
    if best:
        return MODEL_CONTEXT_WINDOWS[best]
    if default is not None:
        return default
    raise UnknownModelError(
        f"unknown model {model!r}: its context window is not in the table; pass the window "
        f"explicitly (e.g. TokenBudget(max_tokens, ...) or context_window=...)"
    )
