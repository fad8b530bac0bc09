"""Reciprocal rank fusion."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axio_context_sqlite.search.ranking import RRF_K, Fused, reciprocal_rank_fusion


def test_scores_are_the_rrf_sum_and_both_lists_beat_one() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])
    assert [f.key for f in fused] == ["b", "a", "d", "c"]
    by_key = {f.key: f for f in fused}
    assert by_key["b"].score == pytest.approx(1 / 62 + 1 / 61)
    assert by_key["a"].score == pytest.approx(1 / 61)
    assert by_key["d"].score == pytest.approx(1 / 62)
    assert by_key["c"].score == pytest.approx(1 / 63)
    assert by_key["b"].ranks == (2, 1)
    assert by_key["c"].ranks == (3, None)
    assert RRF_K == 60


def test_ties_go_to_the_better_rank_then_the_earlier_list() -> None:
    # x and y both sit at rank 1 of one list: equal scores, x's list comes first.
    assert [f.key for f in reciprocal_rank_fusion([["x"], ["y"]])] == ["x", "y"]
    assert [f.key for f in reciprocal_rank_fusion([["y"], ["x"]])] == ["y", "x"]
    # k=0: p = 1 + 1/3, q = 1/2 + 1/2 = 1, s = 1, r = 1/3. q and s tie; s holds rank 1.
    fused = reciprocal_rank_fusion([["p", "q", "r"], ["s", "q", "p"]], k=0)
    assert [f.key for f in fused] == ["p", "s", "q", "r"]
    assert fused[1].score == fused[2].score == 1.0
    a_then_b = reciprocal_rank_fusion([["a", "b"], ["b", "a"]])
    assert a_then_b[0].score == a_then_b[1].score
    assert [f.key for f in a_then_b] == ["a", "b"]


def test_repeated_key_in_one_list_counts_once_at_its_best_position() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "a", "a"]])
    assert [(f.key, f.ranks) for f in fused] == [("a", (1,)), ("b", (2,))]
    assert fused[0].score == pytest.approx(1 / 61)


def test_weights_and_limit() -> None:
    fused = reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0, 3.0], limit=1)
    assert fused == [Fused(key="b", score=pytest.approx(3 / 61), ranks=(None, 1))]
    assert reciprocal_rank_fusion([["a"]], limit=0) == []
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []


def test_keys_can_be_tuples() -> None:
    fused = reciprocal_rank_fusion([[("s1", 3), ("s2", 0)], [("s2", 0)]])
    assert fused[0].key == ("s2", 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"k": -1}, "k must be"), ({"weights": [1.0]}, "1 weights given for 2"), ({"limit": -1}, "limit")],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        reciprocal_rank_fusion([["a"], ["b"]], **kwargs)  # type: ignore[arg-type]


rankings = st.lists(st.lists(st.integers(0, 30), max_size=20), max_size=4)


@given(rankings)
def test_fusion_is_a_deterministic_ordering_of_the_union(lists: list[list[int]]) -> None:
    fused = reciprocal_rank_fusion(lists)
    keys = [f.key for f in fused]
    assert len(keys) == len(set(keys))
    assert set(keys) == {x for ranking in lists for x in ranking}
    assert all(a.score >= b.score for a, b in itertools.pairwise(fused))
    assert reciprocal_rank_fusion(lists) == fused
    for f in fused:
        expected = sum(1 / (RRF_K + r) for r in f.ranks if r is not None)
        assert f.score == pytest.approx(expected)
        for ranking, rank in zip(lists, f.ranks, strict=True):
            assert rank == (ranking.index(f.key) + 1 if f.key in ranking else None)


@given(rankings)
def test_an_item_first_in_every_list_it_is_in_and_in_all_lists_wins(lists: list[list[int]]) -> None:
    lists = [r for r in lists if r]
    if not lists:
        return
    lists = [[999, *r] for r in lists]
    assert reciprocal_rank_fusion(lists)[0].key == 999
