"""Ranking a pool's items against a query by their descriptions: words and, with an embedder,
meaning, fused by reciprocal rank (the same fusion as the message search)."""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from typing import Final, TypeVar

__all__ = ["RRF_K", "check_k", "cosine", "fuse", "word_ranking", "words"]

K = TypeVar("K", bound=Hashable)

#: Cormack, Clarke and Büttcher's constant (SIGIR 2009).
RRF_K: Final = 60

_WORD = re.compile(r"\w+")


def check_k(k: object) -> int:
    """``k`` checked: an int >= 1."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    return k


def words(text: str) -> set[str]:
    """Lower-cased words of ``text``."""
    return {w.casefold() for w in _WORD.findall(text)}


def word_ranking(query: str, descriptions: Sequence[tuple[K, str]]) -> list[K]:
    """Keys whose description shares a word with the query, most shared words first (ties:
    the shorter description, then the earlier item)."""
    q = words(query)
    if not q:
        return []
    scored = []
    for i, (key, text) in enumerate(descriptions):
        d = words(text)
        hits = len(q & d)
        if hits:
            scored.append((-hits, len(d), i, key))
    return [key for *_, key in sorted(scored, key=lambda s: s[:3])]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity (0 for a zero vector)."""
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


def fuse(rankings: Sequence[Sequence[K]], limit: int) -> list[K]:
    """Reciprocal rank fusion of ``rankings`` (each best first), best first, at most ``limit``."""
    score: dict[K, float] = {}
    best: dict[K, tuple[int, int]] = {}
    for r, ranking in enumerate(rankings):
        for pos, key in enumerate(dict.fromkeys(ranking)):
            score[key] = score.get(key, 0.0) + 1.0 / (RRF_K + pos + 1)
            best[key] = min(best.get(key, (pos, r)), (pos, r))
    return sorted(score, key=lambda key: (-score[key], best[key]))[:limit]
