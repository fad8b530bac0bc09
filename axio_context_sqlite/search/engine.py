"""Searching every session: keyword (FTS5 bm25), semantic (embeddings), hybrid (both, fused).

A search is one thread hop and one read snapshot (the query is embedded just before it):

- **keyword**: ``messages_fts MATCH`` with the person's words made into an expression that cannot
  be a syntax error (:func:`.fts.match_expression`), or with ``raw`` FTS5 syntax whose errors
  become :class:`SearchQueryError`; ranked by bm25 (body 1.0, tool output 0.25), leaving out
  of the ranking, on a large database, words found in most messages (:func:`_keyword`).
- **semantic**: the query's binary code against ``message_codes``
  (``code MATCH vec_bit(?) AND k = ?``, with the filters as vec0 metadata constraints) gives
  :data:`CANDIDATES` candidates, re-scored exactly from ``message_vectors``. Where sqlite-vec does
  not run on the connection, or the codes are stale (see :mod:`.indexing`), an exact scan of
  ``message_vectors`` (filters in SQL, distances in Python) answers instead; it is what the
  codes approximate, so both give the same top hits. A query embedder whose model or
  dimension differ from the database's is refused (:class:`EmbeddingMismatchError`). A search
  narrowed to at most :data:`EXACT_ROWS` messages (a session, a project) scans them exactly.
  Messages whose cosine similarity to the query is at most :data:`MIN_SIMILARITY` are no hits.
- **hybrid**: reciprocal rank fusion (:mod:`.ranking`) of the top :data:`DEPTH` of each.
- **raw**: the FTS5 expression filters every mode; the semantic ranking covers only the
  messages it matches, by the embedding of the words it asks for (not its operators, nor
  what ``NOT`` leaves out), so ``parser NOT pizza`` finds no message about pizza in any mode.
  Up to :data:`EXACT_ROWS` matches are scanned exactly; more go through the codes (when they
  can answer), keeping the candidates that match (:func:`_semantic_raw`).

Where a message is found: once, under the session that owns its row. A fork's inherited messages
are its ancestor's rows, so a search finds them as the ancestor's; ``project`` filters on the
owner's project. With ``session_id`` the search covers that session's whole transcript (the
lineage segments of :func:`.rows.segments`) and reports every hit as that session's, at the
position it has there. A deleted session's rows and index entries went with it.

Snippets: the hits' rows are decoded and marked by :mod:`.snippets`, with the search's MATCH
expression (or, for a semantic search, the query's meaningful words).
"""

from __future__ import annotations

import contextlib
import heapq
import math
import zlib
from array import array
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

import msgspec

from axio_context.embeddings import STOPWORDS
from axio_context.errors import (
    DatabaseLockedError,
    EmbeddingMismatchError,
    MessageNotFoundError,
    NoEmbeddingsError,
    ReadOnlyDatabaseError,
    SessionNotFoundError,
    VecUnavailableError,
)

from ..errors import translate_error
from ..store import chunks, indexing, keys, session_rows
from ..store.indexing import CODES_TABLE
from ..store.keys import iso, key
from ..store.message_rows import ROLE_NAMES
from ..store.packing import ROW_ERRORS
from ..store.transactions import read_tx, write_tx
from ..store.vec import binary_code, brute_force_knn
from . import snippets
from .fts import BM25_WEIGHTS, fts_errors, match_terms
from .ranking import reciprocal_rank_fusion

__all__ = [
    "CANDIDATES",
    "DEPTH",
    "MAX_K",
    "MIN_SIMILARITY",
    "IndexStatus",
    "Mode",
    "Query",
    "ReindexReport",
    "SearchHit",
    "SearchResults",
]

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: Final = ("hybrid", "keyword", "semantic")

#: Seconds the fold before a search waits for another connection's write lock; past it the
#: search runs on what is indexed and says how many messages it could not see (SearchResults).
FOLD_WAIT: Final = 0.25
#: Largest ``k`` a search accepts.
MAX_K: Final = 1000
#: Binary-code candidates re-scored exactly per semantic search (at least; 2k when k is larger).
#: 100 kept 99.7% of the exact top 10 on real text (see :mod:`.vec`).
CANDIDATES: Final = 100
#: Cosine similarity a semantic hit must exceed: at 0 or below a message shares nothing with
#: the query (the margin absorbs float32 rounding of an exactly orthogonal pair).
MIN_SIMILARITY: Final = 1e-6
#: How deep each ranking goes before hybrid fuses them (at least ``k``).
DEPTH: Final = 50
#: sqlite-vec's largest ``k``.
VEC_K_MAX: Final = 4096
#: A filtered semantic search over at most this many messages scans them exactly instead of
#: asking vec0 (measured on 100,000 messages: 10,000 rows scan in about 21 ms, while vec0 with a
#: ``sid IN`` filter matching them took about 58 ms; its filters cost per row).
EXACT_ROWS: Final = 16_384
#: From this many stored messages on, words in more than half of them are left out of the
#: keyword ranking (see :func:`_keyword`).
PRUNE_MIN_ROWS: Final = 20_000

#: SQL for the sid of the session owning a keyword-index row (its rowid is the message key).
_FTS_SID: Final = keys.sql_sid("messages_fts.rowid")


# --- result types --------------------------------------------------------------------------------


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


class SearchResults(list[SearchHit]):
    """The hits of a search, best first, and what its keyword part could not see.

    ``unindexed``: messages still queued for the keyword index because the fold before the search
    could not write (``why``: a read-only database, or another connection's write lock); they were
    searched by meaning only. 0 (and ``why`` None) when every committed message was searchable.
    ``why`` also says when a hybrid search ran by keyword alone because the database's embedder
    could not be loaded (:meth:`.Database.search`).
    """

    def __init__(self, hits: Iterable[SearchHit] = (), unindexed: int = 0, why: str | None = None) -> None:
        super().__init__(hits)
        self.unindexed = unindexed
        self.why = why


class IndexStatus(msgspec.Struct, frozen=True):
    """The state of a database's search indexes.

    ``messages`` counts stored rows (a fork's inherited messages are its ancestor's rows);
    ``embedded`` those with an embedding (a message without text never gets one). ``semantic``
    says how semantic search runs here: ``vec0`` (binary codes, re-scored), ``exact`` (the
    brute-force scan: sqlite-vec absent or codes stale) or ``none`` (nothing embedded yet).
    """

    model: str | None
    dimension: int | None
    messages: int
    embedded: int
    vec_available: bool
    codes_stale: bool
    semantic: Literal["vec0", "exact", "none"]


class ReindexReport(msgspec.Struct, frozen=True):
    """What a reindex did: embeddings added (and messages without text, which get none), binary
    codes added and removed, whether it cleared the old embeddings first, and whether the codes
    are still stale (when sqlite-vec does not run on this connection)."""

    model: str
    dimension: int
    embedded: int
    without_text: int
    codes_added: int
    codes_removed: int
    rebuilt: bool
    codes_stale: bool


class Query(msgspec.Struct, frozen=True):
    """A search, ready for :func:`search`: the expression and vector are computed beforehand."""

    text: str
    mode: Mode
    k: int
    match: str | None  # FTS5 expression of the keyword part, or with ``raw`` the filter of every part
    raw: bool
    terms: list[str] | None  # the terms ``match`` ORs together (None for a raw query)
    vector: bytes | None  # float32 embedding of the query (None: no semantic part)
    model: str | None
    dimension: int | None
    project: str | None = None
    session_id: str | None = None
    role: int | None = None
    since_ms: int | None = None


# --- settings ------------------------------------------------------------------------------------


def _settings(c: Any) -> dict[str, str]:
    return {
        str(k): str(v)
        for k, v in c.execute(
            "SELECT key, value FROM settings WHERE key IN"
            " ('embedding_model', 'embedding_dimension', 'codes_stale')"
        ).fetchall()
    }


def _check_model(
    settings: dict[str, str], model: str, dimension: int, what: str = "the query embedder"
) -> bool:
    """True when the database has embeddings from this model; raise when from another one."""
    stored = settings.get("embedding_model")
    if stored is None:
        return False
    stored_dim = settings.get("embedding_dimension")
    if stored != model or stored_dim != str(dimension):
        raise EmbeddingMismatchError(
            f"this database's embeddings come from {stored!r} ({stored_dim} dimensions); "
            f"{what} is {model!r} ({dimension} dimensions). Use the same embedder, "
            "or re-embed the database with `reindex --rebuild`"
        )
    return True


def _codes_usable(c: Any, settings: dict[str, str]) -> bool:
    """Whether the vec0 codes can answer: sqlite-vec runs here, they exist and are complete."""
    return "codes_stale" not in settings and indexing.vec_available(c) and indexing.codes_table_exists(c)


# --- scope ---------------------------------------------------------------------------------------


class _Scope(msgspec.Struct):
    """A search within one session: its transcript's segments, and the rows the owners of those
    segments have outside them (which a vec0 ``sid IN (...)`` filter cannot exclude)."""

    session_id: str
    project: str | None
    preview: str | None
    title: str | None
    segments: list[tuple[int, int, int]]
    outside: int

    @property
    def sids(self) -> list[int]:
        return sorted({s for s, _, _ in self.segments})


def _scope(c: Any, session_id: str) -> _Scope:
    row = session_rows.session_row(c, session_id)
    if row is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    preview, title = c.execute("SELECT preview, title FROM sessions WHERE sid = ?", (row.sid,)).fetchone()
    segments = session_rows.segments(c, row)
    outside = 0
    for sid, lo, hi in segments:
        base_len, next_position = c.execute(
            "SELECT base_len, next_position FROM sessions WHERE sid = ?", (sid,)
        ).fetchone()
        outside += (next_position - base_len) - (hi - lo)
    return _Scope(session_id, row.project, preview, title, segments, outside)


# --- keyword -------------------------------------------------------------------------------------


def _message_filters(q: Query, prefix: str = "") -> tuple[list[str], list[Any]]:
    """The role and time filters as SQL conditions on ``{prefix}role`` and ``{prefix}created_at``."""
    where: list[str] = []
    args: list[Any] = []
    if q.role is not None:
        where.append(f"{prefix}role = ?")
        args.append(q.role)
    if q.since_ms is not None:
        where.append(f"{prefix}created_at >= ?")
        args.append(q.since_ms)
    return where, args


def _fts(c: Any, q: Query, scope: _Scope | None, expr: str, limit: int) -> list[tuple[int, float]]:
    """``(message id, bm25)`` of the messages matching ``expr`` that pass the filters, best
    first (bm25 as FTS5 gives it: lower is better)."""
    joins: list[str] = []
    filters, args = _message_filters(q, "m.")
    where = ["messages_fts MATCH ?", *filters]
    args.insert(0, expr)
    if filters:
        joins.append("JOIN messages m ON m.id = messages_fts.rowid")
    if q.project is not None and scope is None:
        joins.append(f"JOIN sessions s ON s.sid = {_FTS_SID}")
        where.append("s.project = ?")
        args.append(q.project)
    # bm25() named with its weights: about twice as fast as ORDER BY the configured rank,
    # which goes through FTS5's sorter (measured: 75 against 138 ms for a word in 100,000 rows)
    score = f"bm25(messages_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]})"
    sql = (
        f"SELECT messages_fts.rowid, {score} FROM messages_fts {' '.join(joins)} WHERE {' AND '.join(where)}"
    )
    found: list[tuple[Any, ...]] = []
    with fts_errors(q.text) if q.raw else contextlib.nullcontext():
        if scope is None:
            found = c.execute(f"{sql} ORDER BY 2, messages_fts.rowid LIMIT ?", (*args, limit)).fetchall()
        else:
            # one query per segment: FTS5 turns a rowid range into a seek, and bm25 values of
            # one index compare across queries, so the lists merge by value
            for sid, lo, hi in scope.segments:
                found += c.execute(
                    f"{sql} AND messages_fts.rowid >= ? AND messages_fts.rowid < ?"
                    " ORDER BY 2, messages_fts.rowid LIMIT ?",
                    (*args, key(sid, lo), key(sid, hi), limit),
                ).fetchall()
            found.sort(key=lambda r: (r[1], r[0]))
    return [(int(r[0]), float(r[1])) for r in found[:limit]]


#: Sessions :func:`_recent` walks before it sorts every match by time instead.
_RECENT_SESSIONS: Final = 32


def _recent(c: Any, q: Query, scope: _Scope | None, expr: str, limit: int) -> list[tuple[int, float]]:
    """``(message id, 0.0)`` of the newest ``limit`` messages (by time, then id) matching
    ``expr`` that pass the filters.

    No index has created_at, so sorting every match of a common word by it looks up the row of
    each match. Instead sessions are walked from the most recently updated
    (sorted too, without an index, but sessions are far fewer than messages), each one's own
    rows from its last position back (a message's time does not decrease with its position),
    and the walk stops once ``limit`` are found and the next session was last updated before
    the oldest of them. This holds while a session's ``updated_at`` is at least
    the time of each message it owns and the clock does not go back (an imported file could
    say otherwise); after :data:`_RECENT_SESSIONS` sessions without an answer (a filter that
    few messages of the recent sessions pass) every match is sorted by time.
    """
    filters, args = _message_filters(q, "m.")
    where = ["messages_fts MATCH ?", *filters]
    args.insert(0, expr)
    source = "messages_fts JOIN messages m ON m.id = messages_fts.rowid"
    sql = f"SELECT messages_fts.rowid, m.created_at FROM {source} WHERE {' AND '.join(where)}"
    best: list[tuple[int, int]] = []  # (created_at, id): a min-heap of the newest ``limit``

    def take(sid: int, lo: int, hi: int) -> None:
        # windows of positions [start, end) from the end back, ascending in each (FTS5 walks a
        # rowid range backwards much more slowly), growing until the session's rows can no
        # longer beat the heap
        end, width, taken = hi, 2 * limit, 0
        while end > lo and taken < limit:
            start = max(lo, end - width)
            rows = c.execute(
                f"{sql} AND messages_fts.rowid >= ? AND messages_fts.rowid < ? ORDER BY messages_fts.rowid",
                (*args, key(sid, start), key(sid, end)),
            ).fetchall()
            for mid, created in reversed(rows):
                item = (int(created), int(mid))
                if len(best) < limit:
                    heapq.heappush(best, item)
                elif item > best[0]:
                    heapq.heapreplace(best, item)
                else:
                    return  # older than the heap's oldest: so is the rest of the session
                taken += 1
            end, width = start, width * 4

    with fts_errors(q.text) if q.raw else contextlib.nullcontext():
        if scope is not None:
            for sid, lo, hi in scope.segments:
                take(sid, lo, hi)
        else:
            conditions: list[str] = ["next_position > base_len"]
            params: list[Any] = []
            if q.project is not None:
                conditions.append("project = ?")
                params.append(q.project)
            if q.since_ms is not None:
                conditions.append("updated_at >= ?")
                params.append(q.since_ms)
            sessions = c.execute(
                "SELECT sid, base_len, next_position, updated_at FROM sessions"
                f" WHERE {' AND '.join(conditions)} ORDER BY updated_at DESC, sid DESC",
                params,
            ).fetchall()
            for n, (sid, lo, hi, updated) in enumerate(sessions):
                if len(best) == limit and updated < best[0][0]:
                    break
                if n == _RECENT_SESSIONS:
                    if q.project is not None:
                        source += f" JOIN sessions s ON s.sid = {_FTS_SID}"
                        where.append("s.project = ?")
                        args.append(q.project)
                    rows = c.execute(
                        f"SELECT messages_fts.rowid, m.created_at FROM {source} WHERE {' AND '.join(where)}"
                        " ORDER BY m.created_at DESC, messages_fts.rowid DESC LIMIT ?",
                        (*args, limit),
                    ).fetchall()
                    best = [(int(created), int(mid)) for mid, created in rows]
                    break
                take(sid, lo, hi)
    return [(mid, 0.0) for _, mid in sorted(best, reverse=True)]


def _keyword(c: Any, q: Query, scope: _Scope | None, depth: int) -> list[tuple[int, float]]:
    """The keyword ranking, best first.

    bm25 costs about a microsecond per matching message and word, so a word found in most of
    100,000 messages costs 75 ms to rank by, and it ranks nothing: FTS5's bm25 gives a word in
    more than half the messages an IDF of 1e-6. On a large database (``PRUNE_MIN_ROWS``) such
    words are therefore left out of the ranking: messages are ranked by the other words, and
    messages that match only the common words follow, newest first. A raw query is ranked as
    written.
    """
    assert q.match is not None
    if q.raw or not q.terms:
        return _fts(c, q, scope, q.match, depth)
    stored = int(c.execute("SELECT COALESCE(SUM(next_position - base_len), 0) FROM sessions").fetchone()[0])
    if stored < PRUNE_MIN_ROWS:
        return _fts(c, q, scope, q.match, depth)
    half = stored // 2
    rare: list[str] = []
    common: list[str] = []
    for term in q.terms:
        hits = c.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
            (term, half + 1),
        ).fetchone()[0]
        (common if hits > half else rare).append(term)
    if not common:
        return _fts(c, q, scope, q.match, depth)
    ranked = _fts(c, q, scope, " OR ".join(rare), depth) if rare else []
    if len(ranked) < depth:
        rest = f"({' OR '.join(common)})" + (f" NOT ({' OR '.join(rare)})" if rare else "")
        ranked += _recent(c, q, scope, rest, depth - len(ranked))
    return ranked


# --- semantic ------------------------------------------------------------------------------------


def _candidates(depth: int) -> int:
    return min(VEC_K_MAX, max(CANDIDATES, 2 * depth))


class _Population(msgspec.Struct):
    """The messages a filtered semantic search looks at: id ranges ``[lo, hi)`` of the sessions
    ``sids``, and how many rows those sessions hold outside the ranges."""

    ranges: list[tuple[int, int]]
    sids: list[int]
    outside: int

    @property
    def rows(self) -> int:
        return sum(hi - lo for lo, hi in self.ranges)

    def contains(self, mid: int) -> bool:
        return any(lo <= mid < hi for lo, hi in self.ranges)


def _population(c: Any, q: Query, scope: _Scope | None) -> _Population | None:
    if scope is not None:
        ranges = [(key(sid, lo), key(sid, hi)) for sid, lo, hi in scope.segments]
        return _Population(ranges, scope.sids, scope.outside)
    if q.project is not None:
        own = c.execute(
            "SELECT sid, base_len, next_position FROM sessions"
            " WHERE project = ? AND next_position > base_len",
            (q.project,),
        ).fetchall()
        return _Population([(key(sid, lo), key(sid, hi)) for sid, lo, hi in own], [r[0] for r in own], 0)
    return None


def _semantic(
    c: Any, q: Query, scope: _Scope | None, depth: int, exclude: int | None = None
) -> list[tuple[int, float]]:
    """``(message id, L2 distance)`` nearest first; ``exclude`` leaves one message out.

    Through the codes when they can answer and the search is not narrowed to a few thousand
    messages; a small population (a session, a small project) is scanned exactly, which is
    both exact and faster there than vec0's per-row metadata filtering. A raw query scans the
    messages its expression matches. Messages with a cosine similarity of at most
    :data:`MIN_SIMILARITY` are left out, and so are stored vectors whose distance is not a
    number (a vector holding NaN, stored before such vectors were refused).
    """
    assert q.vector is not None
    settings = _settings(c)
    if q.model is None or q.dimension is None or not _check_model(settings, q.model, q.dimension):
        return []
    want = depth + (exclude is not None)
    population = _population(c, q, scope)
    if population is not None and not population.ranges:
        return []
    candidates = _candidates(want) + (population.outside if population is not None else 0)
    if q.raw and q.match is not None:
        with fts_errors(q.text):
            found = _semantic_raw(c, q, scope, population, want, exclude, settings)
    elif (
        _codes_usable(c, settings)
        and (population is None or population.rows > EXACT_ROWS)
        and candidates <= VEC_K_MAX
    ):
        found = _semantic_codes(c, q, population, want, candidates, exclude)
    else:
        found = _semantic_exact(c, q, population, want, exclude)
    # unit vectors: cosine similarity = 1 - d^2 / 2; a message at or below MIN_SIMILARITY shares
    # nothing with the query (it would only pad the list to k)
    return [(mid, d) for mid, d in found if 1.0 - d * d / 2.0 > MIN_SIMILARITY]


def _semantic_raw(
    c: Any,
    q: Query,
    scope: _Scope | None,
    population: _Population | None,
    depth: int,
    exclude: int | None,
    settings: dict[str, str],
) -> list[tuple[int, float]]:
    """The nearest ``depth`` of the messages the raw expression matches.

    Scanned exactly, with a project as one join on sessions rather than one FTS5 query per
    session of it. An expression matching more than :data:`EXACT_ROWS` messages (counted
    first, up to that) of a search not narrowed to a session goes through the codes instead
    when they can answer: candidates are asked for until :data:`CANDIDATES` (or 2k) of them
    match (each checked by FTS5), then re-scored exactly, as a plain semantic search is; when even
    :data:`VEC_K_MAX` candidates hold too few matches, the exact scan runs.
    """
    assert q.match is not None
    project = q.project if scope is None else None
    if scope is None and _codes_usable(c, settings) and (population is None or population.rows > EXACT_ROWS):
        joins = f" JOIN sessions s ON s.sid = {_FTS_SID} AND s.project = ?" if project else ""
        matches = c.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts{joins} WHERE messages_fts MATCH ? LIMIT ?)",
            (*([project] if project else []), q.match, EXACT_ROWS + 1),
        ).fetchone()[0]
        if matches > EXACT_ROWS:
            found = _semantic_codes_matching(c, q, population, depth, exclude)
            if found is not None:
                return found
    return _semantic_exact(c, q, None if scope is None else population, depth, exclude, q.match, project)


def _semantic_codes_matching(
    c: Any, q: Query, population: _Population | None, depth: int, exclude: int | None
) -> list[tuple[int, float]] | None:
    """:func:`_semantic_codes` of the messages ``q.match`` matches (None: too few among the
    most candidates vec0 gives)."""
    assert q.match is not None
    target = _candidates(depth)
    asked = target
    matching: dict[int, bool] = {}
    while True:
        ids, complete = _code_ids(c, q, population, asked, exclude)
        new = [i for i in ids if i not in matching]
        hits = {
            int(r[0])
            for r in c.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
                " AND rowid IN (SELECT value FROM json_each(?))",
                (q.match, _ids_json(new)),
            )
        }
        matching.update((i, i in hits) for i in new)
        passing = [i for i in ids if matching[i]]
        if len(passing) >= target or complete:
            return _rescore(c, q, passing, depth)
        if asked >= VEC_K_MAX:
            return None
        # ask for enough that, at the share matching so far, the target is met with a margin
        asked = min(VEC_K_MAX, max(2 * asked, asked * target * 5 // (4 * max(len(passing), 1))))


def _code_ids(
    c: Any, q: Query, population: _Population | None, candidates: int, exclude: int | None
) -> tuple[list[int], bool]:
    """The ``candidates`` nearest ids by binary code that pass the filters, and whether that is
    every embedded message passing them (vec0 gave fewer than asked)."""
    assert q.vector is not None
    filters, args = _message_filters(q)  # vec0 keeps role and created_at as metadata columns
    where = ["code MATCH vec_bit(?)", "k = ?", *filters]
    args[:0] = [binary_code(q.vector), candidates]
    if population is not None:
        # by session rather than the project text column: vec0 compares long text metadata
        # row by row from a side table, several times slower
        where.append("sid IN (SELECT value FROM json_each(?))")
        args.append(_ids_json(population.sids))
    ids = [r[0] for r in c.execute(f"SELECT rowid FROM {CODES_TABLE} WHERE {' AND '.join(where)}", args)]
    complete = len(ids) < candidates
    if population is not None and population.outside:
        ids = [i for i in ids if population.contains(i)]
    if exclude is not None:
        ids = [i for i in ids if i != exclude]
    return ids, complete


def _rescore(c: Any, q: Query, ids: Sequence[int], depth: int) -> list[tuple[int, float]]:
    """Exact distances of the candidates ``ids`` only (computed by sqlite-vec), nearest
    ``depth``; a NaN vector's NULL distance is left out."""
    rows = c.execute(
        "SELECT id, vec_distance_l2(embedding, ?) AS d FROM message_vectors"
        " WHERE id IN (SELECT value FROM json_each(?)) AND d IS NOT NULL ORDER BY d, id LIMIT ?",
        (q.vector, _ids_json(ids), depth),
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def _semantic_codes(
    c: Any, q: Query, population: _Population | None, depth: int, candidates: int, exclude: int | None
) -> list[tuple[int, float]]:
    ids, _ = _code_ids(c, q, population, candidates, exclude)
    return _rescore(c, q, ids, depth)


def _semantic_exact(
    c: Any,
    q: Query,
    population: _Population | None,
    depth: int,
    exclude: int | None,
    match: str | None = None,
    project: str | None = None,
) -> list[tuple[int, float]]:
    """The exact answer: every embedded message that passes the filters (and with ``match``,
    that FTS5 expression, and with it ``project``), by distance (computed by sqlite-vec where
    it runs, else in Python), nearest ``depth`` kept on a heap."""
    assert q.vector is not None
    where, args = _message_filters(q, "m.")
    joins = ["JOIN messages m ON m.id = v.id"] if where else []
    source, ident = "message_vectors v", "v.id"
    if match is not None:
        # driven by the expression's matches (an FTS5 seek), each looked up by key
        source, ident = (
            "messages_fts JOIN message_vectors v ON v.id = messages_fts.rowid",
            "messages_fts.rowid",
        )
        where.insert(0, "messages_fts MATCH ?")
        args.insert(0, match)
        if project is not None:
            joins.append(f"JOIN sessions s ON s.sid = {_FTS_SID}")
            where.append("s.project = ?")
            args.append(project)
    if exclude is not None:
        where.append("v.id != ?")
        args.append(exclude)
    in_sql = indexing.vec_available(c)
    column = "vec_distance_l2(v.embedding, ?)" if in_sql else "v.embedding"
    sql = f"SELECT v.id, {column} FROM {source} {' '.join(joins)}"
    head = [q.vector] if in_sql else []

    def rows() -> Iterable[Any]:
        if population is None:
            yield from c.execute(sql + (f" WHERE {' AND '.join(where)}" if where else ""), (*head, *args))
            return
        clauses = " AND ".join([*where, f"{ident} >= ?", f"{ident} < ?"])
        for lo, hi in population.ranges:
            yield from c.execute(f"{sql} WHERE {clauses}", (*head, *args, lo, hi))

    if in_sql:
        scored = (r for r in rows() if r[1] is not None)  # NULL: a stored vector holding NaN
        return [(int(r[0]), float(r[1])) for r in heapq.nsmallest(depth, scored, key=lambda r: (r[1], r[0]))]
    return brute_force_knn(q.vector, rows(), depth)


# --- hits ----------------------------------------------------------------------------------------


class _Ranked(msgspec.Struct):
    mid: int
    score: float
    keyword_rank: int | None
    semantic_rank: int | None


def _rank(q: Query, kw: list[tuple[int, float]], sem: list[tuple[int, float]]) -> list[_Ranked]:
    if q.mode == "keyword":
        return [_Ranked(mid, 0.0 - bm25, i, None) for i, (mid, bm25) in enumerate(kw[: q.k], 1)]
    if q.mode == "semantic":
        # unit vectors: cosine similarity = 1 - d^2 / 2
        return [_Ranked(mid, 1.0 - d * d / 2.0, None, i) for i, (mid, d) in enumerate(sem[: q.k], 1)]
    fused = reciprocal_rank_fusion([[m for m, _ in kw], [m for m, _ in sem]], limit=q.k)
    return [_Ranked(f.key, f.score, f.ranks[0], f.ranks[1]) for f in fused]


def _ids_json(ids: Iterable[int]) -> str:
    return msgspec.json.encode(list(ids)).decode()


def _hits(
    c: Any, ranked: Sequence[_Ranked], scope: _Scope | None, highlight: str | None, raw: bool = False
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
            (_ids_json(ids),),
        )
    }
    sessions = {
        r[0]: r
        for r in c.execute(
            "SELECT sid, id, project, preview, title FROM sessions"
            " WHERE sid IN (SELECT value FROM json_each(?))",
            (_ids_json({keys.sid_of(i) for i in ids}),),
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
        owner = sessions.get(keys.sid_of(r.mid))
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
                position=keys.position_of(r.mid),
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


# --- entry points (each runs on the connection's worker thread) ----------------------------------


def fold_queue(c: Any) -> tuple[int, str | None]:
    """Fold messages queued for the keyword index into it (see indexing.py), waiting at most
    :data:`FOLD_WAIT` for another connection's write lock. Returns ``(0, None)`` when the queue is
    folded, else how many queued messages a keyword search cannot see yet, and why."""
    if c.execute("SELECT 1 FROM fts_pending LIMIT 1").fetchone() is None:
        return 0, None
    timeout = int(c.execute("PRAGMA busy_timeout").fetchone()[0])
    c.execute(f"PRAGMA busy_timeout = {min(timeout, int(FOLD_WAIT * 1000))}")
    try:
        with write_tx(c):
            indexing.flush_pending(c)
    except Exception as exc:  # read-only or locked: search what is indexed; anything else is real
        error = translate_error(exc)
        if isinstance(error, ReadOnlyDatabaseError):
            why = "the database is read-only here"
        elif isinstance(error, DatabaseLockedError):
            why = "another connection holds the write lock"
        else:
            raise
        return int(c.execute("SELECT COUNT(*) FROM fts_pending").fetchone()[0]), why
    finally:
        c.execute(f"PRAGMA busy_timeout = {timeout}")
    return 0, None


def check_expression(c: Any, text: str, match: str) -> None:
    """Raise :class:`SearchQueryError` if the raw FTS5 expression ``match`` does not parse."""
    with fts_errors(text):
        c.execute("SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT 1", (match,)).fetchall()


def search(c: Any, q: Query) -> SearchResults:
    """Fold the keyword queue (when it can), then run the search in one read snapshot."""
    unindexed, why = fold_queue(c) if q.match is not None else (0, None)
    with read_tx(c):
        return SearchResults(_search(c, q), unindexed, why)


def _search(c: Any, q: Query) -> list[SearchHit]:
    scope = _scope(c, q.session_id) if q.session_id is not None else None
    if scope is not None and q.project is not None and scope.project != q.project:
        return []
    depth = max(DEPTH, q.k) if q.mode == "hybrid" else q.k
    kw = _keyword(c, q, scope, depth) if q.match is not None and q.mode != "semantic" else []
    sem: list[tuple[int, float]] = []
    if q.vector is not None and q.mode != "keyword":
        if q.mode == "semantic" and "embedding_model" not in _settings(c):
            raise NoEmbeddingsError(
                "no message of this database is embedded yet, so there is nothing to search by "
                "meaning; `reindex` embeds them"
            )
        sem = _semantic(c, q, scope, depth)
    ranked = _rank(q, kw, sem)
    highlight = _meaningful(q.text) if q.mode == "semantic" and not q.raw else q.match
    if q.raw and highlight is not None:
        with fts_errors(q.text):
            return _hits(c, ranked, scope, highlight, raw=True)
    return _hits(c, ranked, scope, highlight)


def _meaningful(query: str) -> str | None:
    """What a semantic hit highlights: the query's words, less the function words the hashing
    embedder ignores (they would light up in every snippet)."""
    terms = [t for t in match_terms(query) if t.strip('" *').lower() not in STOPWORDS]
    return " OR ".join(terms) if terms else None


def similar(c: Any, session_id: str, position: int, k: int) -> list[SearchHit]:
    """Messages nearest in meaning to one message (itself left out), across every session; a
    negative ``position`` counts from the end of the session's full transcript."""
    with read_tx(c):
        row = session_rows.session_row(c, session_id)
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        asked = position
        if position < 0:
            position += row.next_position
        if not 0 <= position < row.next_position:
            raise MessageNotFoundError(
                f"session {session_id!r} has no message {asked} (it has {row.next_position})"
            )
        owner = session_rows.segments(c, row, position, position + 1)[0][0]
        mid = key(owner, position)
        found = c.execute("SELECT embedding FROM message_vectors WHERE id = ?", (mid,)).fetchone()
        if found is None:
            raise NoEmbeddingsError(
                f"message {position} of session {session_id!r} has no embedding "
                "(it has no text, or it was stored without an embedder: `reindex` adds them)"
            )
        if not all(map(math.isfinite, array("f", bytes(found[0])))):
            raise NoEmbeddingsError(
                f"message {position} of session {session_id!r} has no usable embedding: it holds "
                "NaN or infinite values (from a broken embedder); `reindex --rebuild` replaces them"
            )
        settings = _settings(c)
        dimension = int(settings.get("embedding_dimension", "0"))
        q = Query(
            text="",
            mode="semantic",
            k=k,
            match=None,
            raw=False,
            terms=None,
            vector=bytes(found[0]),
            model=settings.get("embedding_model"),
            dimension=dimension,
        )
        ranked = _rank(q, [], _semantic(c, q, None, k, exclude=mid))
        return _hits(c, ranked, None, None)


def index_status(c: Any) -> IndexStatus:
    """Model, dimension and coverage of the embeddings; which way semantic search runs."""
    with read_tx(c):
        settings = _settings(c)
        messages = int(c.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
        embedded = int(c.execute("SELECT COUNT(*) FROM message_vectors").fetchone()[0])
        vec = indexing.vec_available(c)
        table = indexing.codes_table_exists(c)
    stale = "codes_stale" in settings or (embedded > 0 and not table)
    model = settings.get("embedding_model")
    semantic: Literal["vec0", "exact", "none"]
    if model is None or embedded == 0:
        semantic = "none"
    elif vec and not stale:
        semantic = "vec0"
    else:
        semantic = "exact"
    dim = settings.get("embedding_dimension")
    return IndexStatus(
        model=model,
        dimension=int(dim) if dim is not None else None,
        messages=messages,
        embedded=embedded,
        vec_available=vec,
        codes_stale=stale,
        semantic=semantic,
    )


# --- reindex -------------------------------------------------------------------------------------


def reindex_begin(c: Any, model: str, dimension: int, rebuild: bool) -> tuple[int, bool]:
    """Check (or with ``rebuild`` switch) the database's embedder; returns the number of messages
    without an embedding and whether sqlite-vec runs here (so batches carry codes).

    A rebuild is one transaction: every embedding and code goes and the new model is recorded,
    so the database is never half one model and half another; the fill that follows resumes
    where it stopped if interrupted. A concurrent writer still using the old embedder is then
    refused with :class:`EmbeddingMismatchError` rather than mixing vectors.
    """
    vec = indexing.vec_available(c)
    if rebuild:
        with write_tx(c):
            if indexing.codes_table_exists(c):
                if not vec:
                    raise VecUnavailableError(
                        "this database has sqlite-vec codes, and sqlite-vec does not run on this "
                        "connection, so they cannot be dropped: rebuild where sqlite-vec loads"
                    )
                c.execute(f"DROP TABLE {CODES_TABLE}")
            c.execute("DELETE FROM message_vectors")
            c.execute(
                "DELETE FROM settings WHERE key IN ('embedding_model', 'embedding_dimension', 'codes_stale')"
            )
            indexing.ensure_embedding_settings(c, model, dimension)
    else:
        _check_model(_settings(c), model, dimension, "the embedder given")
    missing = int(
        c.execute(
            "SELECT COUNT(*) FROM messages m"
            " WHERE NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.id = m.id)"
        ).fetchone()[0]
    )
    return missing, vec


class Pending(msgspec.Struct, frozen=True):
    """Messages read for embedding: ids, a fingerprint of each payload, and their (body, tool)."""

    ids: list[int]
    fingerprints: list[int]
    texts: list[tuple[str, str]]
    scanned: int
    last_id: int


def _fingerprint(data: bytes) -> int:
    """A message's content (its MessagePack, :meth:`.chunks.Reader.plain`), summed up: the same
    whether its row is sealed into a chunk or not, compressed or not."""
    return zlib.crc32(data) ^ (len(data) << 32)


def reindex_read(c: Any, after_id: int, limit: int) -> Pending:
    """The next ``limit`` messages (by id, after ``after_id``) that have no embedding."""
    ids: list[int] = []
    fingerprints: list[int] = []
    texts: list[tuple[str, str]] = []
    with read_tx(c):  # the rows and their chunks from one snapshot
        rows = c.execute(
            "SELECT m.id, m.role, m.flags, m.payload FROM messages m WHERE m.id > ?"
            " AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.id = m.id) ORDER BY m.id LIMIT ?",
            (after_id, limit),
        ).fetchall()
        reader = chunks.Reader(c)
        for mid, role, flags, payload in rows:
            try:
                data = reader.plain(mid, flags, payload)
                text = indexing.text_of(role, data)
                fingerprint = _fingerprint(data)
            except ROW_ERRORS:
                continue  # unreadable: reading it reports CorruptDataError; nothing to embed
            ids.append(mid)
            fingerprints.append(fingerprint)
            texts.append(text)
    return Pending(ids, fingerprints, texts, len(rows), rows[-1][0] if rows else after_id)


def reindex_write(
    c: Any, model: str, dimension: int, pending: Pending, vectors: Sequence[tuple[int, bytes, bytes | None]]
) -> int:
    """Store the embeddings of ``pending`` (``(index, vector, code)``) in one transaction, skipping
    messages that changed, went, or were embedded by someone else since they were read."""
    if not vectors:
        return 0
    with write_tx(c):
        wanted = {pending.ids[i]: (pending.fingerprints[i], vec, code) for i, vec, code in vectors}
        current = c.execute(
            "SELECT m.id, m.role, m.created_at, m.flags, m.payload, s.sid, s.project FROM messages m"
            f" JOIN sessions s ON s.sid = {keys.sql_sid('m.id')}"
            " WHERE m.id IN (SELECT value FROM json_each(?))"
            " AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.id = m.id)",
            (_ids_json(wanted),),
        ).fetchall()
        rows: list[indexing.EmbeddingRow] = []
        reader = chunks.Reader(c)
        for mid, role, created, flags, payload, sid, project in current:
            fingerprint, vec, code = wanted[mid]
            try:
                now = _fingerprint(reader.plain(mid, flags, payload))
            except ROW_ERRORS:
                continue
            if now == fingerprint:
                rows.append((mid, vec, code, sid, project, role, created))
        indexing.store_embeddings(c, model, dimension, rows)
    return len(rows)


def codes_plan(c: Any) -> tuple[bool, str | None]:
    """Whether the codes need reconciling here, and if so the token that marks this run.

    The token replaces the stale flag; a connection without sqlite-vec that writes meanwhile
    sets the flag back to ``1``, and :func:`codes_finish` then leaves it for the next run.
    """
    if not indexing.vec_available(c):
        return False, None
    with write_tx(c):
        settings = _settings(c)
        dim = settings.get("embedding_dimension")
        if dim is None:
            return False, None
        table = indexing.codes_table_exists(c)
        any_vector = c.execute("SELECT 1 FROM message_vectors LIMIT 1").fetchone() is not None
        if "codes_stale" not in settings and (table or not any_vector):
            return False, None
        if not table:
            indexing._ensure_codes_table(c, int(dim))
        token = f"reconciling-{keys.now_ms()}"
        c.execute(
            "INSERT INTO settings (key, value) VALUES ('codes_stale', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (token,),
        )
    return True, token


def codes_diff(c: Any) -> tuple[list[int], list[int]]:
    """Code rowids without an embedding, and embedding ids without a code."""
    with read_tx(c):
        coded = {r[0] for r in c.execute(f"SELECT rowid FROM {CODES_TABLE}")}
        vectors = [r[0] for r in c.execute("SELECT id FROM message_vectors")]
    have = set(vectors)
    return sorted(coded - have), [v for v in vectors if v not in coded]


def codes_remove(c: Any, ids: Sequence[int]) -> int:
    """Delete the codes of ``ids`` that still have no embedding."""
    removed = 0
    with write_tx(c):
        for mid in ids:
            if c.execute("SELECT 1 FROM message_vectors WHERE id = ?", (mid,)).fetchone() is None:
                c.execute(f"DELETE FROM {CODES_TABLE} WHERE rowid = ?", (mid,))
                removed += 1
    return removed


def codes_add(c: Any, ids: Sequence[int]) -> int:
    """Compute and store codes for the embeddings of ``ids`` that still lack one."""
    with write_tx(c):
        have = {
            r[0]
            for r in c.execute(
                f"SELECT rowid FROM {CODES_TABLE} WHERE rowid IN (SELECT value FROM json_each(?))",
                (_ids_json(ids),),
            )
        }
        rows = c.execute(
            "SELECT v.id, v.embedding, s.sid, s.project, m.role, m.created_at FROM message_vectors v"
            f" JOIN messages m ON m.id = v.id JOIN sessions s ON s.sid = {keys.sql_sid('v.id')}"
            " WHERE v.id IN (SELECT value FROM json_each(?))",
            (_ids_json(i for i in ids if i not in have),),
        ).fetchall()
        c.executemany(
            f"INSERT INTO {CODES_TABLE} (rowid, sid, project, role, created_at, code)"
            " VALUES (?, ?, ?, ?, ?, vec_bit(?))",
            [
                (mid, sid, project or "", role, ts, binary_code(bytes(vec)))
                for mid, vec, sid, project, role, ts in rows
            ],
        )
    return len(rows)


def codes_finish(c: Any, token: str) -> bool:
    """Clear the stale flag if no one set it again since :func:`codes_plan`; True if cleared."""
    with write_tx(c):
        r = c.execute("SELECT value FROM settings WHERE key = 'codes_stale'").fetchone()
        if r is not None and r[0] == token:
            c.execute("DELETE FROM settings WHERE key = 'codes_stale'")
            return True
    return False


def read_settings(c: Any) -> dict[str, str]:
    """The embedding settings (model, dimension, codes_stale) as recorded."""
    return _settings(c)
