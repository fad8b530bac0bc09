"""Checking a subagent's history before it is saved, the same on every backend: each message a
JSON-encodable dict under a non-empty string key, and a digest of every prefix, so a save can
tell how much of the history the stored session already holds and append only the rest."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from .errors import StateEncodeError

__all__ = ["checked_history", "prefix_digests"]

_JSON: Final = msgspec.json.Encoder(order="sorted")


def prefix_digests(raw: Sequence[bytes]) -> list[str]:
    """SHA-256 of every prefix of ``raw`` (``[0]`` for none), each item length-prefixed."""
    h = hashlib.sha256()
    out = [h.hexdigest()]
    for item in raw:
        h.update(len(item).to_bytes(8, "little"))
        h.update(item)
        out.append(h.hexdigest())
    return out


def checked_history(
    name: object, history: object, stored: tuple[int, str] | None
) -> tuple[str, list[Any], list[str], int]:
    """``(name, messages, digests, first)`` of one subagent's history, or :class:`StateEncodeError`
    naming what is wrong; ``first`` is how many leading messages the stored session already
    holds (``stored``: the count and digest saved last time; 0 when they no longer match)."""
    if not isinstance(name, str) or not name:
        raise StateEncodeError(
            f"subagent_history: a subagent's key must be a non-empty string, got {name!r:.80}"
        )
    if not isinstance(history, list):
        raise StateEncodeError(f"subagent_history[{name!r}] must be a list of message dicts")
    raw: list[bytes] = []
    for i, item in enumerate(history):
        if not isinstance(item, dict):
            raise StateEncodeError(
                f"subagent_history[{name!r}][{i}] must be a dict, got {type(item).__name__}"
            )
        try:
            raw.append(_JSON.encode(item))
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise StateEncodeError(f"subagent_history[{name!r}][{i}] cannot be encoded: {exc}") from None
    digests = prefix_digests(raw)
    first = 0
    if stored is not None and stored[0] <= len(history) and digests[stored[0]] == stored[1]:
        first = stored[0]
    return name, history, digests, first
