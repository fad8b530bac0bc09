"""Search on PostgreSQL: keyword (tsvector + GIN), semantic (pgvector HNSW), hybrid (both, fused).

- **keyword**: ``websearch_to_tsquery('simple', words)``, which accepts anything a person
  types (quotes, ``-word``, ``or``) and never raises a syntax error; ranked by ``ts_rank_cd``
  with the body weighted above tool traffic (weights A and D of the generated ``tsv``).
- **semantic**: ``ORDER BY embedding <=> query`` (cosine distance) over an HNSW index built
  with :data:`HNSW_M` / :data:`HNSW_EF_CONSTRUCTION` and searched with ``hnsw.ef_search`` at
  :data:`EF_SEARCH` (recall@10 against exact measured by ``bench.bench_postgres_recall``), and
  under a filter pgvector 0.8's iterative scan; no hit at a cosine similarity of zero or less.
- **hybrid**: weighted reciprocal rank fusion of the top :data:`DEPTH` of each (the keyword
  candidates holding any of the query's :func:`terms`, as SQLite's do) with the functions
  and weights SQLite's fuses by (:func:`axio_context.search.fusion.fusion_weights`
  from the keyword hits' :func:`coverage` and the semantic similarities), so both rank alike.

Embeddings live in ``embeddings``, created once the database's model and dimension are recorded
(a ``vector(dim)`` column: the HNSW index needs a fixed dimension). Without the ``vector``
extension the keyword search works and the others say how to enable it.
"""

from __future__ import annotations

import re
from math import sqrt
from typing import Any, Final

import msgspec

from axio_context.errors import EmbeddingMismatchError
from axio_context.search.fusion import COUNT_CAP, FUSION_K, blend, fusion_weights, query_shares
from axio_context.search.pruning import PRUNE_MIN_ROWS, common_cap, split_common
from axio_context.search.query import match_terms
from axio_context.search.ranking import Fused, reciprocal_rank_fusion

from .errors import VectorExtensionMissingError

#: Candidates taken from each ranking before fusing (as many as the SQLite backend's).
DEPTH: Final = 50
#: HNSW's graph degree and build-time candidate list, and its search-time candidate list: chosen
#: by ``bench.bench_postgres_recall`` (docs/postgres.md has the table) for recall@10 >= 0.95
#: against exact on agent-transcript embeddings (pgvector's defaults 16/64/40 give 0.71).
HNSW_M: Final = 16
HNSW_EF_CONSTRUCTION: Final = 128
EF_SEARCH: Final = 400
#: ``maintenance_work_mem`` while building the index (a graph that does not fit builds slowly).
BUILD_MEMORY: Final = "512MB"

MARK_START: Final = "\x01"
MARK_END: Final = "\x02"

ENABLE_VECTOR: Final = (
    "semantic search needs pgvector's vector extension in this database: "
    "run `CREATE EXTENSION vector;` as a superuser (or the database owner, pgvector >= 0.5)"
)

_KEYWORD: Final = """
SELECT h.owner, h.position, h.role, h.created_at, h.score, h.seg,
       ts_headline('simple', concat_ws(' ', NULLIF(m.body, ''), NULLIF(m.tool, '')), h.q,
                   'StartSel=' || chr(1) || ', StopSel=' || chr(2) || ', MaxWords=30, MinWords=12') AS snippet
FROM (
    SELECT g.owner, m.seg, m.position, m.role, m.created_at, q,
           ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', m.tsv, q) AS score
    FROM messages m JOIN segments g ON g.seg = m.seg, {parser}('simple', $1) q
    WHERE m.tsv @@ q {filters}
    ORDER BY score DESC, m.seg, m.position
    LIMIT $2
) h JOIN messages m ON m.seg = h.seg AND m.position = h.position
ORDER BY h.score DESC, h.seg, h.position
"""
# The snippet (ts_headline re-parses the text) is made for the page of hits only, after the LIMIT.


class Scope(msgspec.Struct, frozen=True):
    """What a search looks at: the filters of ``search`` (``segments``: the ``(seg, lo, hi)``
    ranges of one session's transcript, :func:`.lineage.chain`), a raw query's tsquery text that
    every hit must match (``raw``), one message left out (``exclude``: ``similar``'s own), and
    the messages of one agent's sessions (``agent_id``) or of one run (``run_id``)."""

    project: str | None = None
    role: str | None = None
    since_ms: int | None = None
    segments: list[tuple[int, int, int]] | None = None
    raw: str | None = None
    exclude: tuple[int, int] | None = None
    agent_id: str | None = None
    run_id: str | None = None


def highlights(marked: str) -> tuple[str, list[tuple[int, int]]]:
    """A ts_headline with our markers, as plain text and the highlighted ranges in it."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for part in re.split(f"({MARK_START}.*?{MARK_END})", marked):
        if part.startswith(MARK_START):
            word = part[1:-1]
            spans.append((at, at + len(word)))
            part = word
        out.append(part)
        at += len(part)
    return "".join(out).replace("\n", " "), spans


def filters(args: list[Any], scope: Scope) -> str:
    """SQL conditions (``AND ...``) for the scope, their values appended to ``args``."""

    def param(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    # A message clear_run hid in the session that owns its row is never a hit (as on SQLite).
    sql = (
        " AND NOT EXISTS (SELECT 1 FROM hidden_messages h JOIN sessions hs ON hs.sid = h.sid"
        " WHERE h.seg = m.seg AND h.position = m.position AND hs.id = g.owner)"
    )
    if scope.agent_id is not None:
        sql += (
            " AND EXISTS (SELECT 1 FROM sessions s JOIN agent_sessions a ON a.sid = s.sid"
            f" WHERE s.id = g.owner AND a.agent_id = {param(scope.agent_id)})"
        )
    if scope.run_id is not None:
        sql += (
            " AND EXISTS (SELECT 1 FROM message_runs t JOIN agent_runs r ON r.id = t.run"
            f" WHERE t.seg = m.seg AND t.position = m.position AND r.run_id = {param(scope.run_id)})"
        )
    if scope.project is not None:
        project = param(scope.project)
        sql += f" AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = g.owner AND s.project = {project})"
    if scope.role is not None:
        sql += f" AND m.role = {param(scope.role)}"
    if scope.since_ms is not None:
        sql += f" AND m.created_at >= {param(scope.since_ms)}"
    if scope.segments is not None:
        segs = param([r[0] for r in scope.segments])
        los = param([r[1] for r in scope.segments])
        his = param([r[2] for r in scope.segments])
        sql += (
            f" AND EXISTS (SELECT 1 FROM unnest({segs}::bigint[], {los}::integer[], {his}::integer[])"
            " AS r (seg, lo, hi) WHERE r.seg = m.seg AND m.position >= r.lo AND m.position < r.hi)"
        )
    if scope.raw is not None:
        sql += f" AND m.tsv @@ to_tsquery('simple', {param(scope.raw)})"
    if scope.exclude is not None:
        seg, position = param(scope.exclude[0]), param(scope.exclude[1])
        sql += f" AND (m.seg, m.position) <> ({seg}::bigint, {position}::integer)"
    return sql


async def keyword(conn: Any, words: str, k: int, scope: Scope, any_of: list[str] | None = None) -> list[Any]:
    """The ``k`` best keyword hits: ``words`` as a person types them, with ``any_of`` the messages
    matching any of those :func:`terms` (hybrid's candidates, as on SQLite), or with
    ``scope.raw`` the raw query's tsquery (``words`` is then ignored)."""
    if any_of is not None and scope.raw is None:
        args: list[Any] = [any_of, k]
        sql = _KEYWORD.replace("{parser}('simple', $1) q", f"(SELECT {any_term(len(any_of))} AS q) AS anyq")
    elif scope.raw is not None:
        args = [scope.raw, k]
        sql = _KEYWORD.replace("{parser}", "to_tsquery")
        scope = msgspec.structs.replace(scope, raw=None)  # it is the query itself
    else:
        args = [words, k]
        sql = _KEYWORD.replace("{parser}", "websearch_to_tsquery")
    return list(await conn.fetch(sql.replace("{filters}", filters(args, scope)), *args))


#: Stored messages (every session's own rows), as SQLite's N.
_STORED: Final = (
    "SELECT COALESCE(SUM(s.next_position - g.base_len), 0) FROM sessions s JOIN segments g ON g.seg = s.seg"
)

#: Each term of $1 (in order): its matching messages, counted up to $2.
_COUNTS: Final = """
SELECT ARRAY(SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM messages m
                     WHERE m.tsv @@ phraseto_tsquery('simple', t.term) LIMIT $2) c)
             FROM unnest($1::text[]) WITH ORDINALITY AS t (term, i) ORDER BY t.i)
"""

#: :data:`_KEYWORD` unranked, newest first: the messages holding only the common words.
_RECENT: Final = (
    _KEYWORD.replace("ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', m.tsv, q) AS score", "0::real AS score")
    .replace(
        "ORDER BY score DESC, m.seg, m.position", "ORDER BY m.created_at DESC, m.seg DESC, m.position DESC"
    )
    .replace(
        "ORDER BY h.score DESC, h.seg, h.position", "ORDER BY h.created_at DESC, h.seg DESC, h.position DESC"
    )
)


async def candidates(conn: Any, words: str, k: int, scope: Scope, any_of: list[str]) -> list[Any]:
    """Hybrid's keyword candidates (:func:`keyword` with ``any_of``), with the words found in most
    messages of a large database left out of the ranking as on SQLite
    (:mod:`axio_context.search.pruning`): ranked by the other words, then the messages holding
    only the common ones, newest first (score 0)."""
    if scope.raw is None and any_of:
        stored = int(await conn.fetchval(_STORED))
        if stored >= PRUNE_MIN_ROWS:
            counts = await conn.fetchval(_COUNTS, any_of, common_cap(stored))
            rare, common = split_common(any_of, [int(n) for n in counts], stored)
            if common:
                ranked = await keyword(conn, words, k, scope, rare) if rare else []
                if len(ranked) < k:
                    ranked += await _recent(conn, k - len(ranked), scope, common, rare)
                return ranked
    return await keyword(conn, words, k, scope, any_of)


async def _recent(conn: Any, k: int, scope: Scope, common: list[str], rare: list[str]) -> list[Any]:
    """The ``k`` newest messages holding any of ``common`` and none of ``rare``."""
    query = f"({any_term(len(common))})"
    if rare:
        query += (
            " && !!("
            + " || ".join(
                f"phraseto_tsquery('simple', ($1::text[])[{i}])"
                for i in range(len(common) + 1, len(common) + len(rare) + 1)
            )
            + ")"
        )
    args: list[Any] = [[*common, *rare], k]
    sql = _RECENT.replace("{parser}('simple', $1) q", f"(SELECT {query} AS q) AS anyq")
    return list(await conn.fetch(sql.replace("{filters}", filters(args, scope)), *args))


_COVERAGE: Final = """
SELECT t.term,
       (SELECT COUNT(*) FROM (SELECT 1 FROM messages m
                              WHERE m.tsv @@ phraseto_tsquery('simple', t.term) LIMIT $2) c) AS n,
       ARRAY(SELECT h.i FROM unnest($3::bigint[], $4::integer[]) WITH ORDINALITY AS h (seg, position, i)
             JOIN messages m ON m.seg = h.seg AND m.position = h.position
             WHERE m.tsv @@ phraseto_tsquery('simple', t.term)) AS holders,
       (SELECT COALESCE(SUM(s.next_position - g.base_len), 0)
        FROM sessions s JOIN segments g ON g.seg = s.seg) AS total
FROM unnest($1::text[]) AS t (term)
"""
# One round trip: per term, its capped count of matching rows, which hits hold it, and the stored
# message count (SQLite's N: every session's own rows).


def terms(query: str) -> list[str]:
    """The query's distinct terms as the SQLite backend splits them
    (:func:`axio_context.search.query.match_terms`: each whitespace-separated word, or a
    quoted phrase), unquoted: each is searched as ``phraseto_tsquery('simple', term)``, which
    matches what FTS5 matches for the quoted term (a word the tokenizer splits, such as
    ``ERR_CONN``, is a phrase on both)."""
    out: list[str] = []
    for term in match_terms(query):
        plain = term.removesuffix(" *")[1:-1].replace('""', '"')
        if plain not in out:
            out.append(plain)
    return out


def any_term(count: int) -> str:
    """A tsquery matching any of the ``count`` terms in the text array ``$1`` (as SQLite's hybrid
    ORs the terms)."""
    return " || ".join(f"phraseto_tsquery('simple', ($1::text[])[{i}])" for i in range(1, count + 1))


async def coverage(conn: Any, words: list[str], hits: list[Any]) -> dict[int, float]:
    """For each keyword hit (by its index in ``hits``), the share of the query it holds: the
    IDF-weighted fraction of its :func:`terms` ``words`` it matches, from 0 to 1, as
    SQLite's ``term_coverage`` computes it (bm25's IDF,
    ``ln(1 + (N - n + 0.5) / (n + 0.5))`` with ``n`` counted up to :data:`COUNT_CAP` and ``N`` the
    messages stored)."""
    if not hits or not words:
        return dict.fromkeys(range(len(hits)), 1.0)
    rows = await conn.fetch(
        _COVERAGE, words, COUNT_CAP, [int(r["seg"]) for r in hits], [int(r["position"]) for r in hits]
    )
    total = int(rows[0]["total"]) if rows else 0
    # WITH ORDINALITY counts from 1
    counted = [(int(r["n"]), {int(i) - 1 for i in r["holders"]}) for r in rows]
    return query_shares(range(len(hits)), total, counted)


async def cosines(conn: Any, vector: Any, kw: list[Any], sem: list[Any]) -> dict[tuple[str, int], float]:
    """Every candidate's cosine similarity with the query, by ``(owner, position)``: the semantic
    rows carry theirs; the keyword rows' are read (those with an embedding)."""
    out = {(r["owner"], r["position"]): float(r["score"]) for r in sem}
    missing = [r for r in kw if (r["owner"], r["position"]) not in out]
    if missing:
        rows = await conn.fetch(
            "SELECT h.i, 1 - (e.embedding <=> $1) AS s"
            " FROM unnest($2::bigint[], $3::integer[]) WITH ORDINALITY AS h (seg, position, i)"
            " JOIN embeddings e ON e.seg = h.seg AND e.position = h.position",
            vector,
            [r["seg"] for r in missing],
            [r["position"] for r in missing],
        )
        for i, similarity in rows:
            r = missing[i - 1]
            out[(r["owner"], r["position"])] = float(similarity)
    return out


async def not_embedded(conn: Any) -> int:
    """Messages with text and no embedding (what semantic search cannot see)."""
    stored = int(await conn.fetchval("SELECT COUNT(*) FROM messages"))
    if int(await conn.fetchval("SELECT COUNT(*) FROM embeddings")) >= stored:
        # every row has an embedding (the common case after a reindex): two index-only counts
        # instead of an anti-join over every message
        return 0
    return int(
        await conn.fetchval(
            "SELECT COUNT(*) FROM messages m WHERE (m.body <> '' OR m.tool <> '')"
            " AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.seg = m.seg AND e.position = m.position)"
        )
    )


async def vectors_ready(conn: Any) -> bool:
    """Whether the embeddings table exists (the extension is there and a model was recorded)."""
    return bool(await conn.fetchval("SELECT to_regclass('embeddings') IS NOT NULL"))


async def require_vector(conn: Any) -> None:
    """Refuse (VectorExtensionMissingError, saying how to enable it) without pgvector."""
    if not await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')"):
        raise VectorExtensionMissingError(ENABLE_VECTOR)


async def ensure_embeddings(conn: Any, model: str, dimension: int) -> None:
    """Record the model and dimension and create the embeddings table with its HNSW index
    (refusing another model or dimension than the one recorded)."""
    await require_vector(conn)
    settings = dict(await conn.fetch("SELECT key, value FROM axio_settings"))
    if "embedding_model" in settings and (
        settings["embedding_model"] != model or int(settings["embedding_dimension"]) != dimension
    ):
        raise EmbeddingMismatchError(
            f"this database's embeddings come from {settings['embedding_model']!r} "
            f"({settings['embedding_dimension']} dimensions), not {model!r} ({dimension})"
        )
    await conn.execute(
        "INSERT INTO axio_settings (key, value) VALUES ('embedding_model', $1), ('embedding_dimension', $2)"
        " ON CONFLICT (key) DO NOTHING",
        model,
        str(dimension),
    )
    await conn.execute(
        f"CREATE TABLE IF NOT EXISTS embeddings (seg bigint NOT NULL, position integer NOT NULL,"
        f" embedding vector({int(dimension)}) NOT NULL, PRIMARY KEY (seg, position))"
    )
    await create_index(conn)


async def create_index(conn: Any) -> None:
    """The HNSW index over the embeddings (a no-op if it is there), built with
    :data:`HNSW_M` and :data:`HNSW_EF_CONSTRUCTION` and memory enough to build it in RAM."""
    if await conn.fetchval("SELECT to_regclass('embeddings_hnsw') IS NOT NULL"):
        return
    await conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
    await conn.execute(
        "CREATE INDEX IF NOT EXISTS embeddings_hnsw ON embeddings USING hnsw (embedding vector_cosine_ops)"
        f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
    )


_SEMANTIC: Final = """
SELECT owner, position, role, created_at, score, snippet, payload FROM (
    SELECT g.owner, m.seg, m.position, m.role, m.created_at, 1 - (e.embedding <=> $1) AS score,
           left(concat_ws(' ', NULLIF(m.body, ''), NULLIF(m.tool, '')), 240) AS snippet,
           CASE WHEN m.body = '' AND m.tool = '' THEN m.payload END AS payload
    FROM embeddings e JOIN messages m ON m.seg = e.seg AND m.position = e.position
         JOIN segments g ON g.seg = m.seg
    WHERE true {filters}
    ORDER BY e.embedding <=> $1
    LIMIT $2
) h ORDER BY score DESC, seg, position
"""
# The outer ORDER BY: with an iterative scan (relaxed order) the index may return a few rows
# slightly out of order; the page is re-sorted by the exact score. ``payload`` only for a row with
# no search text (an encrypted database's): its snippet is made from the opened message instead.


async def semantic(conn: Any, vector: Any, k: int, scope: Scope) -> list[Any]:
    """The ``k`` nearest messages in scope by cosine (HNSW), none at a similarity <= 0.

    With a filter, pgvector 0.8's iterative scan keeps walking the graph until ``k`` rows pass
    it (else HNSW would find the ``ef_search`` nearest and keep only those that pass)."""
    args: list[Any] = [vector, k]
    await conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, k)}")
    if await conn.fetchval("SELECT current_setting('hnsw.iterative_scan', true) IS NOT NULL"):
        await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    rows = await conn.fetch(_SEMANTIC.replace("{filters}", filters(args, scope)), *args)
    return [r for r in rows if r["score"] > 0]


def hybrid_order(
    kw: list[Any],
    sem: list[Any],
    k: int,
    coverage: dict[int, float] | None,
    cosines: dict[tuple[str, int], float] | None,
) -> list[Fused[tuple[str, int]]]:
    """The hybrid ranking of the keyword and semantic rows, by ``(owner, position)``: with the
    keyword hits' ``coverage``, weighted as the SQLite backend weighs (``fusion_weights``) and,
    given every candidate's ``cosines`` (a meaning-level embedder), fused by score (``blend``);
    else by rank with equal weights."""
    weights = [1.0, 1.0]
    if coverage is not None:
        # fusion_weights takes SQLite's (id, distance between unit vectors); the rows carry the
        # cosine similarity s, and d = sqrt(2 - 2s) so its 1 - d^2/2 gives s back
        distances = [(i, sqrt(max(0.0, 2.0 - 2.0 * float(r[4])))) for i, r in enumerate(sem)]
        weights = list(fusion_weights(coverage, distances))
    keys = [(r[0], r[1]) for r in sem]
    if coverage is not None and cosines is not None:
        return blend([((r[0], r[1]), float(r[4])) for r in kw], keys, cosines, (weights[0], weights[1]), k)
    return reciprocal_rank_fusion([[(r[0], r[1]) for r in kw], keys], k=FUSION_K, weights=weights, limit=k)
