"""Text that compresses like an agent transcript's: words drawn from a small vocabulary, so
payloads get compressed."""

from __future__ import annotations

import random

WORDS = (
    "parser", "tokenizer", "state", "machine", "nested", "brackets", "database", "migration", "index",
    "query", "latency", "cache", "retry", "backoff", "config", "path", "permission", "denied",
    "timeout", "socket", "refactor", "edge", "unicode", "escape",
)  # fmt: skip


def prose(rng: random.Random, n: int) -> str:
    """``n`` words; about 7 bytes each."""
    return " ".join(rng.choice(WORDS) for _ in range(n))
