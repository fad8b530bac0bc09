"""Searching every session: keyword (FTS5 bm25), semantic (embeddings), hybrid (both, fused).

A search is one thread hop and one read snapshot (the query is embedded just before it):

- **keyword**: ``messages_fts MATCH`` with the person's words made into an expression that cannot
  be a syntax error (:func:`.fts.match_expression`), or with ``raw`` FTS5 syntax whose errors
  become :class:`SearchQueryError`; ranked by bm25 (body 1.0, tool output 0.25), leaving out
  of the ranking, on a large database, words found in most messages (:func:`keyword_ranking`).
- **semantic**: the query's binary code against every code of ``message_codes``, held in memory
  per connection (:mod:`.codescan`, the filters applied there): the nearest 6,400 ranked by
  cosine, the best :data:`CANDIDATES` re-scored exactly from ``message_vectors``. A codes table
  that module cannot read is asked with vec0's own ``code MATCH vec_bit(?) AND k = ?`` (the
  filters as metadata constraints; a search narrowed to at most :data:`EXACT_ROWS` messages then
  scans them exactly). Where sqlite-vec does not run on the connection, or the codes are stale
  (see :mod:`.indexing`), an exact scan of ``message_vectors`` (filters in SQL, distances in
  Python) answers instead; it is what the codes approximate, so both give the same top hits. A
  query embedder whose model or dimension differ from the database's is refused
  (:class:`EmbeddingMismatchError`).
  Messages whose cosine similarity to the query is at most :data:`MIN_SIMILARITY` are no hits.
  Messages with text and no embedding cannot be found this way: the results count them
  (``not_embedded``; ``reindex`` embeds them).
- **hybrid**: reciprocal rank fusion (:mod:`.ranking`) of the top :data:`DEPTH` of each, each
  ranking weighted by its own confidence: keyword by how much of the query its best hit holds,
  semantic by how far its nearest message stands above its fiftieth (:func:`.hits.fusion_weights`). When
  the query has words, no message contains any of them and the nearest in meaning is weak, a
  hybrid search shows nothing: the messages nearest in meaning are withheld (counted in
  ``withheld``, with a note that semantic mode shows them). Weak: always for the lexical hashing
  embedder (its colliding buckets give unrelated text a positive cosine, so no floor holds for
  it, while "none of your words is anywhere" is exact); below :data:`STRONG_SIMILARITY` for a
  meaning-level one, which finds paraphrases that share no word with anything.
  (When the keyword index could not take in the newest messages, nothing is withheld: meaning
  may be the only way to reach them.)
- **raw**: the FTS5 expression filters every mode; the semantic ranking covers only the
  messages it matches, by the embedding of the words it asks for (not its operators, nor
  what ``NOT`` leaves out), so ``parser NOT pizza`` finds no message about pizza in any mode.
  Up to :data:`EXACT_ROWS` matches are scanned exactly; more go through the codes (when they
  can answer), keeping the candidates that match (:mod:`.semantic`).

Bounds: every query, in every mode, is checked against :mod:`.query`'s limits on length, words,
repeats of a word and prefixes before anything runs (:func:`.query.check_bounds`), and every
statement runs on the connection's worker through :func:`.connection.run`.

Where a message is found: once, under the session that owns its row. A fork's inherited messages
are its ancestor's rows, so a search finds them as the ancestor's; ``project`` filters on the
owner's project. With ``session_id`` the search covers that session's whole transcript (the
lineage segments of :func:`.rows.segments`) and reports every hit as that session's, at the
position it has there. A deleted session's rows and index entries went with it.

Snippets: the hits' rows are decoded and marked by :mod:`.snippets`, with the search's MATCH
expression (or, for a semantic search, the query's meaningful words).
"""

from __future__ import annotations

import math
from array import array
from typing import Any, Final

from axio_context.embeddings import STOPWORDS
from axio_context.errors import (
    DatabaseLockedError,
    MessageNotFoundError,
    NoEmbeddingsError,
    ReadOnlyDatabaseError,
    SessionNotFoundError,
)
from axio_context.search.fusion import LEXICAL_MODEL_PREFIX, STRONG_SIMILARITY, weak_meaning

from ..errors import translate_error
from ..store import indexing, session_rows
from ..store.keys import key
from ..store.transactions import read_tx, write_tx
from ..store.vec import unit_vector
from . import runs
from .fts import fts_errors, match_terms
from .hits import SearchHit, SearchResults, build_hits, rank
from .keyword import keyword_ranking, term_coverage
from .query import DEPTH, MAX_K, MODES, Mode, Query
from .reindex import ReindexReport
from .scope import session_scope
from .semantic import CANDIDATES, MIN_SIMILARITY, cosines, not_embedded, semantic_ranking
from .settings import read_settings
from .status import IndexStatus

__all__ = [
    "CANDIDATES",
    "DEPTH",
    "LEXICAL_MODEL_PREFIX",
    "MAX_K",
    "MIN_SIMILARITY",
    "MODES",
    "STRONG_SIMILARITY",
    "IndexStatus",
    "Mode",
    "Query",
    "ReindexReport",
    "SearchHit",
    "SearchResults",
    "check_expression",
    "fold_queue",
    "search",
    "similar",
    "weak_meaning",
]

#: Seconds the fold before a search waits for another connection's write lock; past it the
#: search runs on what is indexed and says how many messages it could not see (SearchResults).
FOLD_WAIT: Final = 0.25


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
        return _search(c, q, SearchResults(unindexed=unindexed, why=why))


def _search(c: Any, q: Query, results: SearchResults) -> SearchResults:
    scope = session_scope(c, q.session_id) if q.session_id is not None else None
    if scope is not None and q.project is not None and scope.project != q.project:
        return results
    depth = max(DEPTH, q.k) if q.mode == "hybrid" else q.k
    if runs.narrowed(q):
        depth *= runs.DEEPER
    kw = keyword_ranking(c, q, scope, depth) if q.match is not None and q.mode != "semantic" else []
    kw = runs.keep_visible(c, q, kw)
    sem: list[tuple[int, float]] = []
    if q.vector is not None and q.mode != "keyword":
        if q.mode == "semantic" and "embedding_model" not in read_settings(c):
            raise NoEmbeddingsError(
                "no message of this database is embedded yet, so there is nothing to search by "
                "meaning; `reindex` embeds them"
            )
        sem = runs.keep_visible(c, q, semantic_ranking(c, q, scope, depth))
        if q.mode == "semantic":
            results.not_embedded = not_embedded(c, q, scope)
    if q.mode == "hybrid" and q.match is not None and not kw and not results.unindexed and _weak(q, sem):
        # no message holds any of the words and meaning found nothing close: what it found is
        # noise more often than not, so it is withheld and counted (see above)
        results.withheld = len(sem)
        return results
    coverage = (
        term_coverage(c, q.terms, [m for m, _ in kw]) if q.mode == "hybrid" and q.terms and sem else None
    )
    meaning = coverage is not None and q.model is not None and not q.model.startswith(LEXICAL_MODEL_PREFIX)
    # a meaning-level embedder's cosines are comparable across messages: fused by score (hits.blend)
    near = cosines(c, q, {m for m, _ in kw} | {m for m, _ in sem}) if meaning else None
    ranked = rank(q, kw, sem, coverage, near)
    highlight = _meaningful(q.text) if q.mode == "semantic" and not q.raw else q.match
    if q.raw and highlight is not None:
        with fts_errors(q.text):
            results.hits = build_hits(c, ranked, scope, highlight, raw=True)
    else:
        results.hits = build_hits(c, ranked, scope, highlight)
    return results


def _weak(q: Query, sem: list[tuple[int, float]]) -> bool:
    return weak_meaning(q.model, 1.0 - sem[0][1] ** 2 / 2.0 if sem else None)


def _meaningful(query: str) -> str | None:
    """What a semantic hit highlights: the query's words, less the function words the hashing
    embedder ignores (they would light up in every snippet)."""
    terms = [t for t in match_terms(query) if t.strip('" *').lower() not in STOPWORDS]
    return " OR ".join(terms) if terms else None


def similar(c: Any, session_id: str, position: int, k: int) -> SearchResults:
    """Messages nearest in meaning to one message (itself left out), across every session; a
    negative ``position`` counts from the end of the session's full transcript. ``not_embedded``
    counts the messages with text it could not compare (no embedding)."""
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
        settings = read_settings(c)
        dimension = int(settings.get("embedding_dimension", "0"))
        values = unit_vector(bytes(found[0]), dimension)
        if not all(map(math.isfinite, values)):
            raise NoEmbeddingsError(
                f"message {position} of session {session_id!r} has no usable embedding: it holds "
                "NaN or infinite values (from a broken embedder); `reindex --rebuild` replaces them"
            )
        q = Query(
            text="",
            mode="semantic",
            k=k,
            match=None,
            raw=False,
            terms=None,
            vector=array("f", values).tobytes(),
            model=settings.get("embedding_model"),
            dimension=dimension,
        )
        ranked = rank(q, [], semantic_ranking(c, q, None, k, exclude=mid))
        return SearchResults(hits=build_hits(c, ranked, None, None), not_embedded=not_embedded(c, q, None))
