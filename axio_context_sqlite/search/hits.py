"""Search results: the ranked message ids turned into hits (decoded rows, sessions, snippets),
and the results Struct that carries them with what the search could not see."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from axio_context.catalog.expiry_sql import live_session
from axio_context.expiry import now_ms
from axio_context.search.fusion import (
    COVERAGE_POWER,
    FUSION_K,
    KEYWORD_SHARE,
    MARGIN_POWER,
    SEMANTIC_FLOOR,
    blend,
    fusion_weights,
    semantic_margin,
)
from axio_context.search.results import SearchHit, SearchResults

from ..store import chunks, indexing, keys
from ..store.keys import iso
from ..store.message_rows import ROLE_NAMES
from ..store.packing import ROW_ERRORS
from . import snippets
from .query import Query
from .ranking import reciprocal_rank_fusion
from .scope import Scope, ids_json

__all__ = [
    "COVERAGE_POWER",
    "FUSION_K",
    "KEYWORD_SHARE",
    "MARGIN_POWER",
    "SEMANTIC_FLOOR",
    "Ranked",
    "SearchHit",
    "SearchResults",
    "blend",
    "build_hits",
    "fusion_weights",
    "rank",
    "semantic_margin",
]

_LOW: Final = (1 << keys.SHIFT) - 1


class Ranked(msgspec.Struct):
    mid: int
    score: float
    keyword_rank: int | None
    semantic_rank: int | None


def rank(
    q: Query,
    kw: list[tuple[int, float]],
    sem: list[tuple[int, float]],
    coverage: dict[int, float] | None = None,
    cosines: dict[int, float] | None = None,
) -> list[Ranked]:
    """The ranked message ids of a search from its keyword ranking (``(id, bm25)``, best first),
    its semantic one (``(id, distance)`` between unit vectors, nearest first) and, for a hybrid
    search, the share of the query each keyword hit holds and, for a meaning-level embedder,
    every candidate's cosine with the query (then fused by :func:`blend`, else by rank)."""
    if q.mode == "keyword":
        return [Ranked(mid, 0.0 - bm25, i, None) for i, (mid, bm25) in enumerate(kw[: q.k], 1)]
    if q.mode == "semantic":
        # unit vectors: cosine similarity = 1 - d^2 / 2
        return [Ranked(mid, 1.0 - d * d / 2.0, None, i) for i, (mid, d) in enumerate(sem[: q.k], 1)]
    weights = [1.0, 1.0]
    if coverage is not None:
        # all of the query in a keyword hit (an identifier, a question in the message's words) and
        # keyword leads; little of it (a paraphrase's common word) and meaning leads, as far as
        # its nearest message stands out from the crowd
        weights = list(fusion_weights(coverage, sem))
        if cosines is not None:
            blended = blend(kw, [m for m, _ in sem], cosines, (weights[0], weights[1]), q.k)
            return [Ranked(f.key, f.score, f.ranks[0], f.ranks[1]) for f in blended]
    fused = reciprocal_rank_fusion(
        [[m for m, _ in kw], [m for m, _ in sem]], k=FUSION_K, limit=q.k, weights=weights
    )
    return [Ranked(f.key, f.score, f.ranks[0], f.ranks[1]) for f in fused]


def build_hits(
    c: Any, ranked: Sequence[Ranked], scope: Scope | None, highlight: str | None, raw: bool = False
) -> list[SearchHit]:
    """Decode the ranked messages (only those) into hits with their sessions and snippets
    (``raw``: every hit matches ``highlight``, the query's own expression)."""
    if not ranked:
        return []
    ids = [r.mid for r in ranked]
    rows = {
        r[0]: r
        for r in c.execute(
            "SELECT id, role, flags, payload, created_at FROM messages"
            " WHERE id IN (SELECT value FROM json_each(?))",
            (ids_json(ids),),
        )
    }
    sessions = {
        r[0]: r
        for r in c.execute(
            "SELECT sid, id, project, preview, title FROM sessions"
            f" WHERE sid IN (SELECT value FROM json_each(?)) AND {live_session()}",
            (ids_json({i >> keys.SHIFT for i in ids}), now_ms()),
        )
    }
    texts: dict[int, tuple[str, str]] = {}
    reader = chunks.Reader(c)
    for mid, (_, role, flags, payload, _) in sorted(rows.items()):
        try:
            texts[mid] = indexing.text_of(role, reader.plain(mid, flags, payload))
        except ROW_ERRORS:
            texts[mid] = ("", "")  # a damaged row: found by its index entry, shown without text
    # only hits known to match the expression are looked for past the first window: a hit found
    # by meaning alone rarely holds the words, and its whole text would be tokenized for nothing
    late = [r.mid for r in ranked if (raw or r.keyword_rank is not None) and r.mid in texts]
    marked = snippets.find(c, texts, highlight, late)
    hits: list[SearchHit] = []
    for r in ranked:
        row = rows.get(r.mid)
        owner = sessions.get(r.mid >> keys.SHIFT)
        if row is None or owner is None:
            continue  # an index entry whose message is gone, or a session that has expired
        snippet, spans = marked.get(r.mid) or snippets.excerpt(texts[r.mid])
        if scope is not None:
            session_id, project, preview, title = scope.session_id, scope.project, scope.preview, scope.title
        else:
            session_id, project, preview, title = owner[1], owner[2], owner[3], owner[4]
        hits.append(
            SearchHit(
                session_id=session_id,
                position=r.mid & _LOW,
                role=ROLE_NAMES[row[1]] if 0 <= row[1] < len(ROLE_NAMES) else str(row[1]),
                snippet=snippet,
                highlights=spans,
                score=r.score,
                keyword_rank=r.keyword_rank,
                semantic_rank=r.semantic_rank,
                preview=preview or "(empty)",
                project=project,
                created_at=iso(row[4]),
                title=title,
            )
        )
    return hits
