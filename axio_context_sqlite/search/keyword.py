"""The keyword ranking: FTS5 bm25 over the query's MATCH expression, filtered and scoped, with
the words found in most messages of a large database left out of the ranking."""

from __future__ import annotations

import contextlib
import heapq
from typing import Any, Final

from axio_context.search.fusion import COUNT_CAP, query_shares
from axio_context.search.pruning import PRUNE_MIN_ROWS, common_cap, split_common

from ..store.keys import key
from .fts import BM25_WEIGHTS, fts_errors
from .query import Query
from .scope import Scope, ids_json, message_filters

__all__ = ["COUNT_CAP", "PRUNE_MIN_ROWS", "keyword_ranking", "query_shares", "term_coverage"]


def _fts(c: Any, q: Query, scope: Scope | None, expr: str, limit: int) -> list[tuple[int, float]]:
    """``(message id, bm25)`` of the messages matching ``expr`` that pass the filters, best
    first (bm25 as FTS5 gives it: lower is better)."""
    joins: list[str] = []
    filters, args = message_filters(q, "m.")
    where = ["messages_fts MATCH ?", *filters]
    args.insert(0, expr)
    if filters:
        joins.append("JOIN messages m ON m.id = messages_fts.rowid")
    if q.project is not None and scope is None:
        joins.append("JOIN sessions s ON s.sid = (messages_fts.rowid >> 32)")
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


def _recent(c: Any, q: Query, scope: Scope | None, expr: str, limit: int) -> list[tuple[int, float]]:
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
    filters, args = message_filters(q, "m.")
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
                        source += " JOIN sessions s ON s.sid = (messages_fts.rowid >> 32)"
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


def keyword_ranking(c: Any, q: Query, scope: Scope | None, depth: int) -> list[tuple[int, float]]:
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
    counts = [
        int(
            c.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
                (term, common_cap(stored)),
            ).fetchone()[0]
        )
        for term in q.terms
    ]
    rare, common = split_common(q.terms, counts, stored)  # the rule both backends apply
    if not common:
        return _fts(c, q, scope, q.match, depth)
    ranked = _fts(c, q, scope, " OR ".join(rare), depth) if rare else []
    if len(ranked) < depth:
        rest = f"({' OR '.join(common)})" + (f" NOT ({' OR '.join(rare)})" if rare else "")
        ranked += _recent(c, q, scope, rest, depth - len(ranked))
    return ranked


def term_coverage(c: Any, terms: list[str], ids: list[int]) -> dict[int, float]:
    """For each message of ``ids``, the share of the query it holds: the IDF-weighted fraction
    of ``terms`` (FTS5 terms, each a word or phrase) that it matches, from 0 to 1.

    IDF as bm25's, ``ln(1 + (N - n + 0.5) / (n + 0.5))`` with ``n`` counted up to
    :data:`COUNT_CAP`: a message holding only the query's common words covers little of it, one
    holding its rare words (an identifier, an error string) covers most of it.
    """
    if not ids or not terms:
        return dict.fromkeys(ids, 1.0)
    total = int(c.execute("SELECT COALESCE(SUM(next_position - base_len), 0) FROM sessions").fetchone()[0])
    wanted = ids_json(ids)
    counted: list[tuple[int, set[int]]] = []
    for term in dict.fromkeys(terms):
        n = int(
            c.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
                (term, COUNT_CAP),
            ).fetchone()[0]
        )
        holders = {
            int(r[0])
            for r in c.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
                " AND rowid IN (SELECT value FROM json_each(?))",
                (term, wanted),
            )
        }
        counted.append((n, holders))
    return query_shares(ids, total, counted)
