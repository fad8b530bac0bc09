"""Search results: the ranked message ids turned into hits (decoded rows, sessions, snippets),
and the results Struct that carries them with what the search could not see."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeVar, overload

import msgspec

from ..store import chunks, indexing, keys
from ..store.keys import iso
from ..store.message_rows import ROLE_NAMES
from ..store.packing import ROW_ERRORS
from . import snippets
from .query import DEPTH, Query
from .ranking import Fused, reciprocal_rank_fusion
from .scope import Scope, ids_json

__all__ = [
    "KEYWORD_SHARE",
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


class SearchHit(msgspec.Struct, frozen=True):
    """One message found: where it is, why, and a snippet of it.

    ``snippet`` is plain text (whitespace collapsed, ``…`` where it was cut); ``highlights`` are
    ``(start, end)`` character ranges in it of the words that matched the query. ``score`` is
    higher for better hits: the bm25 relevance in keyword mode, the cosine similarity in semantic
    mode, the fused RRF score in hybrid mode. ``keyword_rank`` / ``semantic_rank`` are the hit's
    1-based place in each ranking (None where it was not in it). ``preview``, ``title`` and
    ``project`` are the session's; ``created_at`` is the message's time (ISO 8601, UTC).
    """

    session_id: str
    position: int
    role: str
    snippet: str
    highlights: list[tuple[int, int]]
    score: float
    keyword_rank: int | None
    semantic_rank: int | None
    preview: str
    project: str | None
    created_at: str
    title: str | None = None

    def marked(self, before: str = "[", after: str = "]") -> str:
        """The snippet with every highlighted range wrapped in ``before`` ... ``after``."""
        out: list[str] = []
        last = 0
        for start, end in self.highlights:
            out += [self.snippet[last:start], before, self.snippet[start:end], after]
            last = end
        out.append(self.snippet[last:])
        return "".join(out)


class SearchResults(msgspec.Struct, kw_only=True):
    """The hits of a search, best first, and notes on what it could not see or chose not to show.

    ``unindexed``: messages still queued for the keyword index because the fold before the search
    could not write (``why``: a read-only database, or another connection's write lock); they
    were searched by meaning only. ``not_embedded`` (semantic mode): messages with text in the
    search's scope that have no embedding, so meaning could not find them (``reindex`` embeds
    them). ``fallback``: why a hybrid search ran by keyword alone. ``withheld`` (hybrid mode):
    messages found by meaning alone and not shown, because no message contains the query's words
    (see :mod:`.engine`). :meth:`notes` says all of it in sentences for people.

    It reads like the list of its hits (``len``, iteration, indexing, ``== []``).
    """

    hits: list[SearchHit] = msgspec.field(default_factory=list)
    unindexed: int = 0
    why: str | None = None
    not_embedded: int = 0
    fallback: str | None = None
    withheld: int = 0

    def notes(self) -> list[str]:
        """One sentence per note, for people (the CLI prints them to stderr)."""
        out: list[str] = []
        if self.fallback is not None:
            out.append(self.fallback)
        if self.unindexed:
            out.append(
                f"{self.unindexed:,} recent message(s) could not be searched by keyword: {self.why}"
                " (taking them into the keyword index needs a write)"
            )
        if self.not_embedded:
            out.append(
                f"{self.not_embedded:,} message(s) have no embedding and were not searched by meaning;"
                " `reindex` embeds them"
            )
        if self.withheld:
            out.append(
                "no message contains these words; semantic mode shows the messages nearest in"
                " meaning (which may be unrelated)"
            )
        return out

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    @overload
    def __getitem__(self, index: int) -> SearchHit: ...
    @overload
    def __getitem__(self, index: slice) -> list[SearchHit]: ...
    def __getitem__(self, index: int | slice) -> SearchHit | list[SearchHit]:
        return self.hits[index]

    def __bool__(self) -> bool:
        return bool(self.hits)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):  # compares as the list of its hits, as it once was one
            return self.hits == other
        if isinstance(other, SearchResults):
            return msgspec.structs.astuple(self) == msgspec.structs.astuple(other)
        return NotImplemented


class Ranked(msgspec.Struct):
    mid: int
    score: float
    keyword_rank: int | None
    semantic_rank: int | None


#: Hybrid fusion (see :func:`rank` and docs/search.md "Hybrid search"): weighted reciprocal rank
#: fusion with the usual constant, each ranking weighted by its own confidence. The keyword
#: ranking weighs ``c ** COVERAGE_POWER``, ``c`` the IDF-weighted share of the query's terms its
#: best hit holds (:func:`.keyword.term_coverage`); the semantic ranking weighs
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
            " WHERE sid IN (SELECT value FROM json_each(?))",
            (ids_json({i >> keys.SHIFT for i in ids}),),
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
            continue  # defensive: an index entry whose message is gone
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
