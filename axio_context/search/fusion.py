"""Hybrid search's fusion rules, the same on every backend: how much each ranking weighs, the
score fusion of a meaning-level embedder, each message's share of the query, and when meaning
alone is too weak to show.

Each backend computes its rankings its own way (FTS5 bm25 and sqlite-vec on SQLite, ts_rank and
pgvector on PostgreSQL) and fuses them here, so both order the same hits the same way.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Final, TypeVar

from .query import DEPTH
from .ranking import Fused

__all__ = [
    "COUNT_CAP",
    "COVERAGE_POWER",
    "FUSION_K",
    "KEYWORD_SHARE",
    "LEXICAL_MODEL_PREFIX",
    "MARGIN_POWER",
    "SEMANTIC_FLOOR",
    "STRONG_SIMILARITY",
    "blend",
    "fusion_weights",
    "query_shares",
    "semantic_margin",
    "weak_meaning",
]

#: Hybrid fusion (see docs/search.md "Hybrid search"): weighted reciprocal rank
#: fusion with the usual constant, each ranking weighted by its own confidence. The keyword
#: ranking weighs ``c ** COVERAGE_POWER``, ``c`` the IDF-weighted share of the query's terms its
#: best hit holds (:func:`query_shares`); the semantic ranking weighs
#: ``max(SEMANTIC_FLOOR, 1 - c ** COVERAGE_POWER) * m ** MARGIN_POWER``, ``m`` how far its nearest
#: message stands out (:func:`semantic_margin`). Chosen on tests/data/agent_retrieval.json (alone,
#: among 100,000 and 1,000,000 workload messages with the hashing embedder, alone with
#: all-MiniLM-L6-v2), tests/data/retrieval.json held out; the figures are in docs/search.md
#: (for a meaning-level embedder those weights set keyword's share in :func:`blend`).
FUSION_K: int = 60
COVERAGE_POWER: float = 5.0
SEMANTIC_FLOOR: float = 0.5
MARGIN_POWER: float = 2.0


def semantic_margin(sem: list[tuple[int, float]]) -> float:
    """How far the semantic ranking's nearest message stands above the rest, from 0 to 1:
    ``(s1 - s50) / (1 - s50)`` with ``s1`` its cosine similarity and ``s50`` that of the
    :data:`.query.DEPTH`-th, taken as 0 when the ranking is shorter (nothing else was near).

    Among many messages a lexical embedder puts dozens at about the same small similarity, and
    its first is then no better than its fiftieth; a nearest message well above the crowd is
    meaning's confident answer.
    """
    if not sem:
        return 0.0
    first = 1.0 - sem[0][1] ** 2 / 2.0
    last = 1.0 - sem[DEPTH - 1][1] ** 2 / 2.0 if len(sem) >= DEPTH else 0.0
    return max(0.0, first - last) / max(1e-9, 1.0 - last)


def fusion_weights(coverage: dict[int, float], sem: list[tuple[int, float]]) -> tuple[float, float]:
    """The (keyword, semantic) weights of a hybrid search (see :data:`COVERAGE_POWER`)."""
    full = max(coverage.values(), default=0.0) ** COVERAGE_POWER
    return full, max(SEMANTIC_FLOOR, 1.0 - full) * semantic_margin(sem) ** MARGIN_POWER


#: The most a meaning-level embedder's hybrid search gives the keyword side in
#: :func:`blend` (keyword's share is ``KEYWORD_SHARE * wk / (wk + ws)`` of the
#: :func:`fusion_weights`). Chosen with all-MiniLM-L6-v2 (int8 ONNX) on both labelled sets, alone
#: and among 10,000 workload messages (docs/search.md): 0.5 to 0.6 keep hybrid within half a
#: query of its better part on every class; 0.7 lets keyword hits crowd meaning out again.
KEYWORD_SHARE: float = 0.6

H = TypeVar("H", bound=Hashable)


def blend(
    kw: Sequence[tuple[H, float]],
    sem: Sequence[H],
    cosines: Mapping[H, float],
    weights: tuple[float, float],
    limit: int,
) -> list[Fused[H]]:
    """A meaning-level embedder's hybrid ranking: each candidate (of either ranking) scored by
    ``a * k + (1 - a) * s``, best first.

    ``k`` is its keyword score over the best one's (``kw``: ``(key, score)`` best first, bm25 or
    ts_rank, 0 where absent); ``s`` its cosine similarity (``cosines``: every candidate's, with the
    query), rescaled so that the nearest of ``sem`` (the semantic ranking, nearest first) is 1 and
    its :data:`.query.DEPTH`-th (0 when it is shorter) is 0; ``a`` is keyword's share, from the
    :func:`fusion_weights`. Why not ranks: such an embedder's cosine means the same for every
    message, so a keyword hit far from the query in meaning can fall below the nearest messages
    instead of taking the top places by rank alone (the plain keyword questions where hybrid
    fell below semantic). Ties go to the better rank in either list, then the keyword list.
    """
    wk, ws = weights
    share = KEYWORD_SHARE * wk / (wk + ws) if wk + ws > 0 else 0.0
    best = kw[0][1] if kw else 0.0
    first = cosines.get(sem[0], 0.0) if sem else 0.0
    last = cosines.get(sem[DEPTH - 1], 0.0) if len(sem) >= DEPTH else 0.0
    span = first - last  # nothing to rescale by (a flat ranking): meaning adds nothing
    ranks: dict[H, list[int | None]] = {}
    for li, keys_ in enumerate(([key for key, _ in kw], sem)):
        for pos, key in enumerate(keys_):
            slot = ranks.setdefault(key, [None, None])
            if slot[li] is None:
                slot[li] = pos + 1
    keyword = {key: (score / best if best else 0.0) for key, score in reversed(kw)}
    scores = {
        key: share * keyword.get(key, 0.0)
        + ((1.0 - share) * min(1.0, max(0.0, (cosines.get(key, last) - last) / span)) if span > 0 else 0.0)
        for key in ranks
    }

    def order(key: H) -> tuple[float, int, int]:
        held = [(r, li) for li, r in enumerate(ranks[key]) if r is not None]
        return (-scores[key], *min(held))

    return [
        Fused(key=key, score=scores[key], ranks=tuple(ranks[key])) for key in sorted(ranks, key=order)[:limit]
    ]


#: Matches counted per term for its rarity (:func:`term_coverage`); rarer than this is all that
#: the weights need to tell apart, and counting stops there.
COUNT_CAP: Final = 2_000


def query_shares(ids: Iterable[int], total: int, counted: Sequence[tuple[int, set[int]]]) -> dict[int, float]:
    """Each of ``ids``' share of the query, given each term's ``(n, holders)``: how many of the
    ``total`` messages match it (capped) and which of ``ids`` do; a term weighs bm25's IDF,
    ``ln(1 + (N - n + 0.5) / (n + 0.5))``. Both backends' coverage ends here."""
    weights = [math.log(1.0 + (max(total, n) - n + 0.5) / (n + 0.5)) for n, _ in counted]
    whole = sum(weights) or 1.0
    return {i: sum(w for w, (_, h) in zip(weights, counted, strict=True) if i in h) / whole for i in ids}


#: Embedders whose model name starts so are lexical (:class:`HashingEmbedder`): their
#: neighbours are never strong without a shared word.
LEXICAL_MODEL_PREFIX: Final = "axio-hashing-"
#: Cosine similarity at which a meaning-level embedder's nearest message is shown by a hybrid
#: search that no keyword matched. Measured with all-MiniLM-L6-v2 on tests/data/agent_retrieval.json:
#: unrelated queries ("recipe for banana bread") reach 0.17-0.34 (median 0.22), paraphrases their
#: target 0.06-0.64 (median 0.33); 0.35 keeps out every unrelated one measured.
STRONG_SIMILARITY: Final = 0.35


def weak_meaning(model: str | None, nearest: float | None) -> bool:
    """Whether the semantic ranking's best (its cosine similarity ``nearest``; None: nothing was
    near) is too far to show without a keyword match: always for a lexical embedder (the hashing
    one: with no shared word, only colliding buckets are left), else below
    :data:`STRONG_SIMILARITY`. Both backends ask it."""
    if nearest is None or model is None or model.startswith(LEXICAL_MODEL_PREFIX):
        return True
    return nearest < STRONG_SIMILARITY
