"""``select``'s plans: the keyword ranking of pool descriptions and the nearest embeddings come
from the backend (:class:`~.dialect.PoolSQL`: FTS5 or a ``tsvector``, sqlite-vec or pgvector);
which entries still lack an embedding, storing them, and the exact ranking in Python when the
database cannot rank embeddings itself are written here once. All look only at the entries the
pool shows (``visible``: seq -> key)."""

from __future__ import annotations

from collections.abc import Sequence

from axio_context.embeddings import vector_from_blob
from axio_context.sql import Dialect, ExecuteMany, Plan, Rows, Value

from ..selection import cosine
from .dialect import PoolSQL

__all__ = ["keyword_ranking", "missing_vectors", "native_vectors", "store_vectors", "vector_ranking"]


def keyword_ranking(
    d: Dialect, p: PoolSQL, query: str, visible: dict[int, str], depth: int
) -> Plan[list[str]]:
    """Keys of visible entries whose description shares a word with the query, best first."""
    if not visible:
        return []
    return (yield from p.keyword_ranking(d, query, visible, depth))


def native_vectors(d: Dialect, p: PoolSQL) -> Plan[bool]:
    """Whether the database ranks embeddings itself."""
    return bool((yield Value(p.vectors_probe)))


def missing_vectors(d: Dialect, p: PoolSQL, model: str, seqs: Sequence[int]) -> Plan[list[int]]:
    """The entries among ``seqs`` with no embedding from ``model`` yet."""
    rows = yield Rows(
        f"SELECT seq FROM context_pool_vectors WHERE model = ? AND {d.any_of('seq', 'bigint')}",
        (model, d.list_arg(seqs)),
    )
    have = {int(r[0]) for r in rows}
    return [s for s in seqs if s not in have]


def store_vectors(d: Dialect, p: PoolSQL, model: str, vectors: Sequence[tuple[int, bytes]]) -> Plan[None]:
    """Keep embeddings (float32) of entries that still exist."""
    yield ExecuteMany(
        f"INSERT INTO context_pool_vectors (seq, model, embedding) SELECT ?, ?, {p.vector_placeholder}"
        " WHERE EXISTS (SELECT 1 FROM context_pool_entries WHERE seq = ?)"
        " ON CONFLICT (seq) DO UPDATE SET model = excluded.model, embedding = excluded.embedding",
        [(seq, model, p.vector_param(blob), seq) for seq, blob in vectors],
    )


def vector_ranking(
    d: Dialect,
    p: PoolSQL,
    model: str,
    query: bytes,
    cid: int,
    visible: dict[int, str],
    depth: int,
    native: bool,
) -> Plan[list[str]]:
    """Keys of visible entries by cosine distance of their description's embedding to the
    query (float32), nearest first: by the database when ``native``, else exactly here (a zero
    vector, whose distance is undefined, is left out)."""
    if native:
        return (yield from p.nearest(d, model, query, cid, visible, depth))
    rows = yield Rows(
        f"SELECT seq, embedding FROM context_pool_vectors WHERE model = ? AND {d.any_of('seq', 'bigint')}",
        (model, d.list_arg(visible)),
    )
    q = vector_from_blob(query)
    scored = []
    for seq, stored in rows:
        v = vector_from_blob(p.vector_blob(stored))
        if len(v) == len(q) and any(v):
            scored.append((-cosine(q, v), int(seq)))
    return [visible[s] for _, s in sorted(scored)[:depth]]
