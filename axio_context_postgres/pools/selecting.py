"""``select``'s SQL on PostgreSQL: the full-text ranking of pool descriptions (the generated
``tsvector``, English stemming as SQLite's porter tokenizer, any of the query's words), and
their stored embeddings ranked by cosine distance with pgvector's ``<=>`` when the extension is
installed, exactly in Python otherwise. Both look only at the entries the pool shows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from axio_context.pools.selection import cosine

from ..connection import Pool, has_vector, translated
from .rows import WHERE, reading, writing

__all__ = ["has_vector_extension", "keyword_ranking", "missing_vectors", "store_vectors", "vector_ranking"]

_WORD: Final = re.compile(r"[^\W_]+")

_KEYWORD: Final = (
    "SELECT e.seq FROM context_pool_entries e, to_tsquery('english', $1) AS q"
    " WHERE e.seq = ANY($2::bigint[]) AND e.tsv @@ q ORDER BY ts_rank(e.tsv, q) DESC, e.seq LIMIT $3"
)
# Exact cosine distance over the shown entries' embeddings of one model and dimension; a zero
# vector's distance is NaN (undefined): left out.
_NEAREST: Final = (
    "SELECT seq FROM (SELECT seq, embedding::vector <=> $2::real[]::vector AS d FROM context_pool_vectors"
    " WHERE model = $1 AND seq = ANY($3::bigint[]) AND cardinality(embedding) = cardinality($2::real[]))"
    " ranked WHERE d <> 'NaN'::float8 ORDER BY d, seq LIMIT $4"
)


def tsquery_text(query: str) -> str | None:
    """The query's words joined by ``|`` (any of them), as ``to_tsquery`` text: only letters
    and digits reach the parser, so a typed query is never a syntax error. None: no word."""
    found = _WORD.findall(query)
    return " | ".join(found) if found else None


async def has_vector_extension(pool: Pool) -> bool:
    """Whether pgvector is installed in this database (else vectors are ranked in Python)."""
    async with translated(WHERE), pool.acquire() as conn:
        return await has_vector(conn)


async def keyword_ranking(pool: Pool, query: str, visible: dict[int, str], depth: int) -> list[str]:
    """Keys of visible entries whose description shares a word with the query, best first."""
    text = tsquery_text(query)
    if text is None or not visible:
        return []
    async with reading(pool) as c:
        found = await c.fetch(_KEYWORD, text, list(visible), depth)
    return [visible[int(r[0])] for r in found]


async def missing_vectors(pool: Pool, model: str, seqs: Sequence[int]) -> list[int]:
    """The entries among ``seqs`` with no embedding from ``model`` yet."""
    async with reading(pool) as c:
        have = {
            int(r[0])
            for r in await c.fetch(
                "SELECT seq FROM context_pool_vectors WHERE model = $1 AND seq = ANY($2::bigint[])",
                model,
                list(seqs),
            )
        }
    return [s for s in seqs if s not in have]


async def store_vectors(pool: Pool, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Keep embeddings of entries that still exist, in one transaction."""
    async with writing(pool) as c:
        await c.executemany(
            "INSERT INTO context_pool_vectors (seq, model, embedding) SELECT $1, $2, $3::real[]"
            " WHERE EXISTS (SELECT 1 FROM context_pool_entries WHERE seq = $1)"
            " ON CONFLICT (seq) DO UPDATE SET model = excluded.model, embedding = excluded.embedding",
            [(seq, model, list(vec)) for seq, vec in vectors],
        )


async def vector_ranking(
    pool: Pool, model: str, query: Sequence[float], visible: dict[int, str], depth: int, *, pgvector: bool
) -> list[str]:
    """Keys of visible entries by cosine distance of their description's embedding to the
    query, nearest first (with pgvector in the server, else exactly here)."""
    async with reading(pool) as c:
        if pgvector:
            found = await c.fetch(_NEAREST, model, list(query), list(visible), depth)
            return [visible[int(r[0])] for r in found]
        stored = await c.fetch(
            "SELECT seq, embedding FROM context_pool_vectors WHERE model = $1 AND seq = ANY($2::bigint[])",
            model,
            list(visible),
        )
    scored = sorted((-cosine(query, v), int(s)) for s, v in stored if len(v) == len(query) and any(v))
    return [visible[s] for _, s in scored[:depth]]
