"""Search on PostgreSQL: keyword (tsvector + GIN), semantic (pgvector HNSW), hybrid (both, fused).

- **keyword**: ``websearch_to_tsquery('simple', words)``, which accepts anything a person
  types (quotes, ``-word``, ``or``) and never raises a syntax error; ranked by ``ts_rank_cd``
  with the body weighted above tool traffic (weights A and D of the generated ``tsv``).
- **semantic**: ``ORDER BY embedding <=> query`` (cosine distance) over an HNSW index, with
  ``hnsw.ef_search`` raised to :data:`EF_SEARCH` so the approximate top hits match an exact scan
  (the bench measures the recall against exact); no hit at a cosine similarity of zero or less.
- **hybrid**: reciprocal rank fusion of the top :data:`DEPTH` of each, the SQLite backend's very
  function (:func:`axio_context_sqlite.search.ranking.reciprocal_rank_fusion`), so both rank alike.

Embeddings live in ``embeddings``, created once the database's model and dimension are recorded
(a ``vector(dim)`` column: the HNSW index needs a fixed dimension). Without the ``vector``
extension the keyword search works and the others say how to enable it.
"""

from __future__ import annotations

import re
from typing import Any, Final

from axio_context.errors import EmbeddingMismatchError

from .errors import VectorExtensionMissingError

#: Candidates taken from each ranking before fusing (as many as the SQLite backend's).
DEPTH: Final = 50
#: HNSW's candidate list during a search (pgvector's default 40 can miss exact matches).
EF_SEARCH: Final = 200

MARK_START: Final = "\x01"
MARK_END: Final = "\x02"

ENABLE_VECTOR: Final = (
    "semantic search needs pgvector's vector extension in this database: "
    "run `CREATE EXTENSION vector;` as a superuser (or the database owner, pgvector >= 0.5)"
)

_KEYWORD: Final = """
SELECT h.owner, h.position, h.role, h.created_at, h.score,
       ts_headline('simple', m.body || ' ' || m.tool, h.q,
                   'StartSel=' || chr(1) || ', StopSel=' || chr(2) || ', MaxWords=30, MinWords=12') AS snippet
FROM (
    SELECT g.owner, m.seg, m.position, m.role, m.created_at, q,
           ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', m.tsv, q) AS score
    FROM messages m JOIN segments g ON g.seg = m.seg, websearch_to_tsquery('simple', $1) q
    WHERE m.tsv @@ q {filters}
    ORDER BY score DESC, m.seg, m.position
    LIMIT $2
) h JOIN messages m ON m.seg = h.seg AND m.position = h.position
ORDER BY h.score DESC, h.seg, h.position
"""
# The snippet (ts_headline re-parses the text) is made for the page of hits only, after the LIMIT.


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


def filters(args: list[Any], project: str | None, role: str | None, since_ms: int | None) -> str:
    """SQL conditions (``AND ...``) for the filters, their values appended to ``args``."""
    sql = ""
    if project is not None:
        args.append(project)
        sql += f" AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = g.owner AND s.project = ${len(args)})"
    if role is not None:
        args.append(role)
        sql += f" AND m.role = ${len(args)}"
    if since_ms is not None:
        args.append(since_ms)
        sql += f" AND m.created_at >= ${len(args)}"
    return sql


async def keyword(
    conn: Any, words: str, k: int, project: str | None, role: str | None, since_ms: int | None
) -> list[Any]:
    args: list[Any] = [words, k]
    return list(
        await conn.fetch(_KEYWORD.replace("{filters}", filters(args, project, role, since_ms)), *args)
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
    await conn.execute(
        "CREATE INDEX IF NOT EXISTS embeddings_hnsw ON embeddings USING hnsw (embedding vector_cosine_ops)"
    )


_SEMANTIC: Final = """
SELECT g.owner, m.position, m.role, m.created_at, 1 - (e.embedding <=> $1) AS score,
       left(m.body || ' ' || m.tool, 240) AS snippet
FROM embeddings e JOIN messages m ON m.seg = e.seg AND m.position = e.position
     JOIN segments g ON g.seg = m.seg
WHERE true {filters}
ORDER BY e.embedding <=> $1
LIMIT $2
"""


async def semantic(
    conn: Any, vector: Any, k: int, project: str | None, role: str | None, since_ms: int | None
) -> list[Any]:
    args: list[Any] = [vector, k]
    await conn.execute(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
    rows = await conn.fetch(_SEMANTIC.replace("{filters}", filters(args, project, role, since_ms)), *args)
    return [r for r in rows if r["score"] > 0]
