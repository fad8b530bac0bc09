"""Reciprocal rank fusion: one ranking out of several (keyword and vector), by rank alone.

bm25 scores and vector distances live on unrelated scales; RRF ignores the scores and sums
``weight / (k + rank)`` over the rankings an item appears in (rank counted from 1), so an item
near the top of both lists beats one at the top of only one. ``k = 60`` is the constant of
Cormack, Clarke and Büttcher (SIGIR 2009); a larger ``k`` flattens the head of each list.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

import msgspec

__all__ = ["RRF_K", "Fused", "reciprocal_rank_fusion"]

#: The usual RRF constant.
RRF_K = 60

K = TypeVar("K", bound=Hashable)


class Fused(msgspec.Struct, Generic[K], frozen=True):
    """One item of a fused ranking: its key, its RRF score, and its 1-based rank in each input
    ranking (None where it was absent)."""

    key: K
    score: float
    ranks: tuple[int | None, ...]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]],
    *,
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
) -> list[Fused[K]]:
    """Merge ``rankings`` (each best first) into one, best first.

    Ties in score go to the item with the better best rank, then to the one holding that rank in
    the earlier ranking; no two items tie on both, so the order is total and repeatable. A key repeated in
    one ranking counts once, at its first (best) position.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    elif len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights given for {len(rankings)} rankings")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")

    n = len(rankings)
    scores: dict[K, float] = {}
    ranks: dict[K, list[int | None]] = {}
    best: dict[K, tuple[int, int]] = {}  # (best rank, index of the first ranking holding it)
    for li, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        for pos, key in enumerate(ranking):
            slot = ranks.get(key)
            if slot is None:
                slot = ranks[key] = [None] * n
                scores[key] = 0.0
            if slot[li] is not None:
                continue  # repeated within one ranking: the first position counts
            rank = pos + 1
            slot[li] = rank
            scores[key] += weight / (k + rank)
            if key not in best or rank < best[key][0]:
                best[key] = (rank, li)
    order = sorted(scores, key=lambda key: (-scores[key], best[key]))
    if limit is not None:
        order = order[:limit]
    return [Fused(key=key, score=scores[key], ranks=tuple(ranks[key])) for key in order]
