"""The semantic ranking: nearest embeddings to the query's, through the binary codes (read by
:mod:`.codescan`, else by vec0's own KNN; re-scored exactly) or an exact scan, optionally limited
to what a raw FTS5 expression matches."""

from __future__ import annotations

import contextlib
import heapq
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..store import indexing
from ..store.indexing import CODES_TABLE
from ..store.keys import key
from ..store.vec import binary_code, brute_force_knn, quantize, unit_vector
from .fts import fts_errors
from .query import Query
from .scope import Scope, ids_json, message_filters
from .settings import check_model, codes_usable, read_settings

if TYPE_CHECKING:
    from .codescan import Filters

__all__ = [
    "CANDIDATES",
    "EXACT_ROWS",
    "MIN_SIMILARITY",
    "VEC_K_MAX",
    "cosines",
    "exact_scan",
    "not_embedded",
    "semantic_ranking",
]

#: Candidates re-scored exactly per semantic search (at least; 2k when k is larger): the best by
#: cosine of :data:`.codescan.WIDE` nearest codes, or vec0's nearest codes (100 kept 99.7% of the
#: exact top 10 on real text, see :mod:`.vec`).
CANDIDATES: Final = 100
#: Cosine similarity a semantic hit must exceed: at 0 or below a message shares nothing with
#: the query (the margin absorbs float32 rounding of an exactly orthogonal pair).
MIN_SIMILARITY: Final = 1e-6
#: sqlite-vec's largest ``k``.
VEC_K_MAX: Final = 4096
#: A filtered semantic search over at most this many messages scans them exactly instead of
#: asking vec0 (measured on 100,000 messages: 10,000 rows scan in about 21 ms, while vec0 with a
#: ``sid IN`` filter matching them took about 58 ms; its filters cost per row).
EXACT_ROWS: Final = 16_384


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


def _population(c: Any, q: Query, scope: Scope | None) -> _Population | None:
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


def semantic_ranking(
    c: Any, q: Query, scope: Scope | None, depth: int, exclude: int | None = None
) -> list[tuple[int, float]]:
    """``(message id, L2 distance)`` nearest first; ``exclude`` leaves one message out.

    Through the codes when they can answer: read by :mod:`.codescan` (any population, its
    filters applied in memory), else by vec0's KNN when the search is not narrowed to a few
    thousand messages; a small population (a session, a small project) is otherwise scanned
    exactly, which is both exact and faster there than vec0's per-row metadata filtering. A raw
    query scans the messages its expression matches. Messages with a cosine similarity of at most
    :data:`MIN_SIMILARITY` are left out, and so are stored vectors whose distance is not a
    number (a vector holding NaN, stored before such vectors were refused).
    """
    assert q.vector is not None
    settings = read_settings(c)
    if q.model is None or q.dimension is None or not check_model(settings, q.model, q.dimension):
        return []
    want = depth + (exclude is not None)
    population = _population(c, q, scope)
    if population is not None and not population.ranges:
        return []
    candidates = _candidates(want) + (population.outside if population is not None else 0)
    if q.raw and q.match is not None:
        with fts_errors(q.text):
            found = _semantic_raw(c, q, scope, population, want, exclude, settings)
    elif (usable := codes_usable(c, settings)) and (
        (scanned := _semantic_scan(c, q, population, want, candidates, exclude)) is not None
    ):
        found = scanned
    elif usable and (population is None or population.rows > EXACT_ROWS) and candidates <= VEC_K_MAX:
        ids, _ = _vec0_ids(c, q, population, candidates, exclude)
        found = _rescore(c, q, ids, want)
    else:
        found = exact_scan(c, q, population, want, exclude)
    # unit vectors: cosine similarity = 1 - d^2 / 2; a message at or below MIN_SIMILARITY shares
    # nothing with the query (it would only pad the list to k)
    return [(mid, d) for mid, d in found if 1.0 - d * d / 2.0 > MIN_SIMILARITY]


def _semantic_raw(
    c: Any,
    q: Query,
    scope: Scope | None,
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
    if scope is None and codes_usable(c, settings) and (population is None or population.rows > EXACT_ROWS):
        joins = " JOIN sessions s ON s.sid = (messages_fts.rowid >> 32) AND s.project = ?" if project else ""
        matches = c.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts{joins} WHERE messages_fts MATCH ? LIMIT ?)",
            (*([project] if project else []), q.match, EXACT_ROWS + 1),
        ).fetchone()[0]
        if matches > EXACT_ROWS:
            found = _semantic_codes_matching(c, q, population, depth, exclude)
            if found is not None:
                return found
    return exact_scan(c, q, None if scope is None else population, depth, exclude, q.match, project)


def _semantic_codes_matching(
    c: Any, q: Query, population: _Population | None, depth: int, exclude: int | None
) -> list[tuple[int, float]] | None:
    """The nearest codes (re-scored) of the messages ``q.match`` matches (None: too few among the
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
                (q.match, ids_json(new)),
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


def _filters(q: Query, population: _Population | None, exclude: int | None) -> Filters:
    from .codescan import Filters

    return Filters(
        q.role,
        q.since_ms,
        population.sids if population is not None else None,
        population.ranges if population is not None and population.outside else None,
        exclude,
    )


def _semantic_scan(
    c: Any, q: Query, population: _Population | None, depth: int, candidates: int, exclude: int | None
) -> list[tuple[int, float]] | None:
    """The codes read by :mod:`.codescan`: its ``candidates`` best (of many more codes, ranked
    by cosine in memory) re-scored exactly; None when it cannot read them."""
    assert q.vector is not None and q.dimension is not None
    from . import codescan  # NumPy: imported by the first semantic search, not by every command

    found = codescan.nearest(c, q.vector, candidates, _filters(q, population, exclude), rescore=True)
    return None if found is None else _rescore(c, q, found[0], depth)


def _code_ids(
    c: Any, q: Query, population: _Population | None, candidates: int, exclude: int | None
) -> tuple[list[int], bool]:
    """The ``candidates`` nearest ids by binary code that pass the filters, and whether that is
    every embedded message passing them."""
    assert q.vector is not None and q.dimension is not None
    from . import codescan

    found = codescan.nearest(c, q.vector, candidates, _filters(q, population, exclude))
    # None: codes laid out otherwise than codescan reads
    return found if found is not None else _vec0_ids(c, q, population, candidates, exclude)


def _vec0_ids(
    c: Any, q: Query, population: _Population | None, candidates: int, exclude: int | None
) -> tuple[list[int], bool]:
    """vec0's KNN over the codes: what :func:`.codescan.nearest` computes, slower (it picks each
    chunk's nearest by one pass per candidate)."""
    assert q.vector is not None
    filters, args = message_filters(q)  # vec0 keeps role and created_at as metadata columns
    where = ["code MATCH vec_bit(?)", "k = ?", *filters]
    args[:0] = [binary_code(q.vector), candidates]
    if population is not None:
        # by session rather than the project text column: vec0 compares long text metadata
        # row by row from a side table, several times slower
        where.append("sid IN (SELECT value FROM json_each(?))")
        args.append(ids_json(population.sids))
    ids = [r[0] for r in c.execute(f"SELECT rowid FROM {CODES_TABLE} WHERE {' AND '.join(where)}", args)]
    complete = len(ids) < candidates
    if population is not None and population.outside:
        ids = [i for i in ids if population.contains(i)]
    return [i for i in ids if i != exclude], complete


#: The cosine distance of a stored embedding (int8, or a float32 one of an older database) to the
#: query, computed by sqlite-vec; parameters: :func:`_distance_args`.
_DISTANCE = (
    "CASE length({col}) WHEN ? THEN vec_distance_cosine(vec_int8({col}), vec_int8(?))"
    " ELSE vec_distance_cosine({col}, ?) END"
)


def _distance_args(q: Query) -> list[Any]:
    assert q.vector is not None and q.dimension is not None
    return [q.dimension, quantize(q.vector), q.vector]


def _l2(cosine_distance: float) -> float:
    """The L2 distance of two unit vectors at this cosine distance (what the rankings compare)."""
    return math.sqrt(max(0.0, 2.0 * cosine_distance))


def _rescore(c: Any, q: Query, ids: Sequence[int], depth: int) -> list[tuple[int, float]]:
    """Distances of the candidates ``ids`` only (computed by sqlite-vec from the stored int8
    vectors), nearest ``depth``; a NaN vector's NULL distance is left out."""
    rows = c.execute(
        f"SELECT id, {_DISTANCE.format(col='embedding')} AS d FROM message_vectors"
        " WHERE id IN (SELECT value FROM json_each(?)) AND d IS NOT NULL ORDER BY d, id LIMIT ?",
        (*_distance_args(q), ids_json(ids), depth),
    ).fetchall()
    return [(int(r[0]), _l2(float(r[1]))) for r in rows]


def exact_scan(
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
    where, args = message_filters(q, "m.")
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
            joins.append("JOIN sessions s ON s.sid = (messages_fts.rowid >> 32)")
            where.append("s.project = ?")
            args.append(project)
    if exclude is not None:
        where.append("v.id != ?")
        args.append(exclude)
    in_sql = indexing.vec_available(c)
    column = _DISTANCE.format(col="v.embedding") if in_sql else "v.embedding"
    sql = f"SELECT v.id, {column} FROM {source} {' '.join(joins)}"
    head = _distance_args(q) if in_sql else []

    def rows() -> Iterable[Any]:
        if population is None:
            yield from c.execute(sql + (f" WHERE {' AND '.join(where)}" if where else ""), (*head, *args))
            return
        clauses = " AND ".join([*where, f"{ident} >= ?", f"{ident} < ?"])
        for lo, hi in population.ranges:
            yield from c.execute(f"{sql} WHERE {clauses}", (*head, *args, lo, hi))

    if in_sql:
        scored = (r for r in rows() if r[1] is not None)  # NULL: a stored vector holding NaN
        nearest = heapq.nsmallest(depth, scored, key=lambda r: (r[1], r[0]))
        return [(int(r[0]), _l2(float(r[1]))) for r in nearest]
    # the query quantized as sqlite-vec's comparison has it, so both paths rank alike
    dim = q.dimension or 0
    query = unit_vector(quantize(q.vector), dim)
    return brute_force_knn(query, ((i, unit_vector(bytes(b), dim)) for i, b in rows()), depth)


def cosines(c: Any, q: Query, ids: Iterable[int]) -> dict[int, float]:
    """The cosine similarity of each message's stored embedding (those that have one) with the
    query, both as int8, as sqlite-vec compares them."""
    assert q.vector is not None
    import numpy as np

    query = np.frombuffer(quantize(q.vector), dtype=np.int8).astype(np.float64)
    out: dict[int, float] = {}
    for mid, blob in c.execute(
        "SELECT id, embedding FROM message_vectors WHERE id IN (SELECT value FROM json_each(?))",
        (ids_json(ids),),
    ):
        if len(blob) not in (len(query), 4 * len(query)):
            continue
        try:  # a float32 one of an older database, quantized as the search compares it
            stored = bytes(blob) if len(blob) == len(query) else quantize(bytes(blob))
        except ValueError:  # all zeros, or NaN (stored before those were refused): no cosine
            continue
        v = np.frombuffer(stored, dtype=np.int8).astype(np.float64)
        norm = float(np.linalg.norm(v) * np.linalg.norm(query))
        if norm > 0 and math.isfinite(norm):
            out[int(mid)] = float(v @ query) / norm
    return out


def not_embedded(c: Any, q: Query, scope: Scope | None) -> int:
    """How many messages a semantic search could have found but did not look at: those in its
    scope and filters (with ``raw``, matching its expression) that have text and no embedding."""
    stored = c.execute("SELECT COALESCE(SUM(next_position - base_len), 0) FROM sessions").fetchone()[0]
    embedded = _embedded(c)
    if embedded >= int(stored):
        # every stored row has an embedding (the common case): nothing to count, in any scope;
        # counting row by row costs about a quarter of a millisecond per thousand messages
        return 0
    filtered = (q.raw and q.match is not None) or scope is not None or q.project is not None
    if not filtered and q.role is None and q.since_ms is None:
        # the whole database: the messages with text are those of the keyword index and its queue,
        # and only those have embeddings (2 ms at 100,000 messages; row by row took 47)
        text = c.execute(
            "SELECT (SELECT COUNT(*) FROM messages_fts_docsize) + (SELECT COUNT(*) FROM fts_pending)"
        ).fetchone()[0]
        return max(0, int(text) - embedded)
    where, args = message_filters(q, "m.")
    where.append("NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.id = m.id)")
    if q.raw and q.match is not None:
        where.append("m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)")
        args.append(q.match)
    else:  # a message without text is in neither: it has nothing to be found by
        where.append(
            "(EXISTS (SELECT 1 FROM messages_fts f WHERE f.rowid = m.id)"
            " OR EXISTS (SELECT 1 FROM fts_pending p WHERE p.id = m.id))"
        )
    sql = f"SELECT COUNT(*) FROM messages m WHERE {' AND '.join(where)}"
    population = _population(c, q, scope)
    with fts_errors(q.text) if q.raw else contextlib.nullcontext():
        if population is None:
            return int(c.execute(sql, args).fetchone()[0])
        return sum(
            int(c.execute(f"{sql} AND m.id >= ? AND m.id < ?", (*args, lo, hi)).fetchone()[0])
            for lo, hi in population.ranges
        )


def _embedded(c: Any) -> int:
    """How many messages have an embedding. Counting ``message_vectors`` walks every page of it
    (12 ms of a 34 ms semantic search at 100,000 messages); complete codes have exactly one row
    per embedding, and vec0's own rowid table counts in a fraction of a millisecond."""
    if codes_usable(c, read_settings(c)):
        with contextlib.suppress(Exception):  # vec0's shadow table, should a version rename it
            return int(c.execute(f"SELECT COUNT(*) FROM {CODES_TABLE}_rowids").fetchone()[0])
    return int(c.execute("SELECT COUNT(*) FROM message_vectors").fetchone()[0])
