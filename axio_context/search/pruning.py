"""Leaving the words found in most messages out of a keyword ranking, on a large database.

A word in more than half the messages ranks nothing (FTS5's bm25 gives it an IDF of 1e-6;
PostgreSQL's ``ts_rank_cd`` weighs it as any other) and costs a score for every message holding
it: past :data:`PRUNE_MIN_ROWS` stored messages, both backends rank by the query's other words,
then give the messages holding only its common words, newest first. Each backend counts the
terms (up to :func:`common_cap`) and runs the two queries; the rule is here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["PRUNE_MIN_ROWS", "common_cap", "split_common"]

#: Stored messages (every session's own rows) from which common words leave the ranking.
PRUNE_MIN_ROWS: Final = 20_000


def common_cap(stored: int) -> int:
    """How far to count a term's messages (a ``LIMIT``): one past half of ``stored``."""
    return stored // 2 + 1


def split_common(terms: Sequence[str], counts: Sequence[int], stored: int) -> tuple[list[str], list[str]]:
    """``terms`` as ``(rare, common)``, in their order: common when in more than half of the
    ``stored`` messages (``counts``: each term's messages, counted up to :func:`common_cap`)."""
    half = stored // 2
    rare: list[str] = []
    common: list[str] = []
    for term, n in zip(terms, counts, strict=True):
        (common if n > half else rare).append(term)
    return rare, common
