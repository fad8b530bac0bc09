"""Hybrid fusion's weights (axio_context_sqlite/search/hits.py): each ranking counts as far as it
is sure. A keyword ranking whose best hit holds the whole query leads; a semantic ranking whose
nearest message stands out from its fiftieth leads a partial keyword match; a flat semantic
ranking (every message about as near: a lexical embedder among many messages) barely counts."""

from __future__ import annotations

import math

import pytest

from axio_context_sqlite.search.hits import (
    COVERAGE_POWER,
    SEMANTIC_FLOOR,
    fusion_weights,
    rank,
    semantic_margin,
)
from axio_context_sqlite.search.query import DEPTH, Query


def _distance(cosine: float) -> float:
    """The distance between unit vectors at this cosine similarity (what the semantic ranking holds)."""
    return math.sqrt(2.0 - 2.0 * cosine)


def _semantic(first: float, rest: float, *, ids: range = range(100, 100 + DEPTH)) -> list[tuple[int, float]]:
    """A semantic ranking of ``len(ids)`` messages: the first at cosine ``first``, the others
    falling evenly from a fifth of the way down to ``rest``."""
    n = len(ids)
    cosines = [first] + [rest + (first - rest) * 0.2 * (n - 2 - i) / max(1, n - 2) for i in range(n - 1)]
    return [(mid, _distance(c)) for mid, c in zip(ids, cosines, strict=True)]


def _hybrid(k: int = 5) -> Query:
    return Query(
        text="q", mode="hybrid", k=k, match="q", raw=False, terms=["q"], vector=b"", model="m", dimension=4
    )


KEYWORD = [(1, -9.0), (2, -8.0), (3, -7.0), (4, -6.0), (5, -5.0)]


def test_the_margin_is_how_far_the_nearest_stands_above_the_fiftieth() -> None:
    assert semantic_margin([]) == 0.0
    flat = _semantic(0.35, 0.30)
    assert semantic_margin(flat) == pytest.approx((0.35 - 0.30) / 0.70)
    standout = _semantic(0.80, 0.15)
    assert semantic_margin(standout) == pytest.approx((0.80 - 0.15) / 0.85)
    # fewer than DEPTH neighbours above zero: nothing else was near, the nearest is measured alone
    short = [(7, _distance(0.6)), (8, _distance(0.2))]
    assert semantic_margin(short) == pytest.approx(0.6)


def test_a_keyword_hit_holding_the_whole_query_gets_the_whole_keyword_weight() -> None:
    kw_weight, sem_weight = fusion_weights({1: 1.0, 2: 0.4}, _semantic(0.9, 0.1))
    assert kw_weight == 1.0
    assert sem_weight == pytest.approx(SEMANTIC_FLOOR * semantic_margin(_semantic(0.9, 0.1)) ** 2)
    assert fusion_weights({1: 0.5}, [])[1] == 0.0  # no neighbour at all: meaning says nothing
    assert fusion_weights({1: 0.5}, _semantic(0.9, 0.1))[0] == pytest.approx(0.5**COVERAGE_POWER)


def test_a_flat_semantic_ranking_does_not_outrank_a_partial_keyword_match() -> None:
    """Among many messages the hashing embedder's neighbours sit at about the same similarity: its
    first (a stranger) must not push the keyword hits down (the rule before put it first here:
    semantic weighed 1 - 0.7**3 = 0.66 against keyword's 0.34)."""
    ranked = rank(_hybrid(), KEYWORD, _semantic(0.35, 0.30), {1: 0.7, 2: 0.6, 3: 0.5, 4: 0.4, 5: 0.4})
    assert [r.mid for r in ranked] == [1, 2, 3, 4, 5]


def test_a_standout_neighbour_leads_a_partial_keyword_match() -> None:
    """A meaning-level embedder's nearest message well above its fiftieth, and a keyword hit holding
    only part of the query: meaning's answer comes first, the keyword hits mix in below it."""
    ranked = rank(_hybrid(60), KEYWORD, _semantic(0.85, 0.12), {1: 0.7, 2: 0.6, 3: 0.5, 4: 0.4, 5: 0.4})
    assert ranked[0].mid == 100 and ranked[0].semantic_rank == 1 and ranked[0].keyword_rank is None
    assert 1 in [r.mid for r in ranked]


def test_a_whole_query_keyword_match_leads_even_a_standout_neighbour() -> None:
    """An identifier found whole by keyword search stays first; meaning fills in below it."""
    ranked = rank(_hybrid(10), KEYWORD, _semantic(0.85, 0.12), {1: 1.0, 2: 0.3, 3: 0.3, 4: 0.3, 5: 0.3})
    assert [r.mid for r in ranked] == [1, 2, 3, 4, 5, 100, 101, 102, 103, 104]


def test_both_rankings_agreeing_beats_either_alone() -> None:
    sem = _semantic(0.85, 0.12, ids=range(3, 3 + DEPTH))  # keyword's third is meaning's first
    ranked = rank(_hybrid(), KEYWORD, sem, {1: 0.8, 2: 0.8, 3: 0.8, 4: 0.8, 5: 0.8})
    assert ranked[0].mid == 3 and ranked[0].keyword_rank == 3 and ranked[0].semantic_rank == 1


# --- a meaning-level embedder: fused by score (hits.blend) ----------------------------------------


def _cosines(sem: list[tuple[int, float]], **more: float) -> dict[int, float]:
    out = {mid: 1.0 - d * d / 2.0 for mid, d in sem}
    out.update({int(k[1:]): v for k, v in more.items()})
    return out


def test_a_keyword_hit_far_in_meaning_falls_below_the_nearest_messages() -> None:
    """Every keyword hit holds the whole query but sits far from it in meaning (cosine 0.1, the
    crowd's level); the message nearest in meaning holds none of its words. By rank, the five
    keyword hits take the top five places; by score the nearest message comes first."""
    sem = _semantic(0.8, 0.1)
    coverage = dict.fromkeys(range(len(KEYWORD)), 1.0)
    cosines = _cosines(sem, m1=0.1, m2=0.1, m3=0.1, m4=0.1, m5=0.1)
    by_rank = [r.mid for r in rank(_hybrid(), KEYWORD, sem, coverage)]
    by_score = rank(_hybrid(), KEYWORD, sem, coverage, cosines)
    assert 100 not in by_rank
    assert by_score[0].mid == 100 and by_score[0].keyword_rank is None and by_score[0].semantic_rank == 1
    assert by_score[0].score == pytest.approx(
        1.0 - 0.6 * 1.0 / (1.0 + SEMANTIC_FLOOR * semantic_margin(sem) ** 2)
    )


def test_keyword_leads_where_meaning_is_flat() -> None:
    """A flat semantic ranking (every message about as near) gives meaning nothing to rescale by:
    the keyword order stands, each hit at keyword's share of its score over the best one."""
    sem = [(100 + i, _distance(0.3)) for i in range(DEPTH)]
    coverage = dict.fromkeys(range(len(KEYWORD)), 1.0)
    ranked = rank(_hybrid(), KEYWORD, sem, coverage, _cosines(sem, m1=0.3, m2=0.3))
    assert [r.mid for r in ranked] == [1, 2, 3, 4, 5]
    assert [r.score for r in ranked] == pytest.approx([0.6 * s / -9.0 for _, s in KEYWORD])


def test_a_hit_in_both_rankings_counts_both_and_ties_go_to_the_better_rank() -> None:
    """Message 1 is the best keyword hit and as near as the nearest: it leads. Two messages with
    the same score keep their order by their best rank; a repeated key counts at its first place."""
    sem = _semantic(0.9, 0.1, ids=range(100, 100 + DEPTH))
    sem = [(1, sem[0][1]), *sem[1:]]
    kw = [(1, -9.0), (7, -4.5), (1, -1.0), (8, -4.5)]
    coverage = dict.fromkeys(range(len(kw)), 0.5)
    ranked = rank(_hybrid(k=100), kw, sem, coverage, _cosines(sem, m7=0.1, m8=0.1))
    assert ranked[0].mid == 1 and (ranked[0].keyword_rank, ranked[0].semantic_rank) == (1, 1)
    order = [r.mid for r in ranked]
    assert order.index(7) < order.index(8) and ranked[order.index(7)].score == ranked[order.index(8)].score
