"""``select``'s SQL: the full-text ranking of pool descriptions, and their stored embeddings
(one per entry and embedder model) ranked by cosine distance, with sqlite-vec when it is
loaded and exactly in Python otherwise. Both are limited to the entries the pool shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from axio_context.embeddings import vector_from_blob
from axio_context.pools.selection import cosine

from ..search.fts import match_expression
from ..store.indexing import vec_available
from ..store.transactions import read_tx, write_tx

__all__ = ["keyword_ranking", "missing_vectors", "store_vectors", "vector_ranking"]

_JSON: Final = msgspec.json.Encoder()
_IN_VISIBLE: Final = (
    "SELECT seq FROM context_pool_vectors WHERE model = ? AND seq IN (SELECT value FROM json_each(?))"
)


def _visible_first(
    c: Any, sql: str, params: tuple[Any, ...], visible: dict[int, str], depth: int
) -> list[str]:
    """Run ``sql`` (seqs, best first, ending in ``LIMIT ?``) and keep the visible ones: first
    with a limit a little past ``depth`` (most entries are visible), else without one."""
    out: list[str] = []
    for limit in (depth * 4, -1):
        rows = c.execute(sql, (*params, limit)).fetchall()
        out = [visible[int(r[0])] for r in rows if int(r[0]) in visible][:depth]
        if len(out) >= depth or len(rows) < limit or limit < 0:
            break
    return out


def keyword_ranking(c: Any, query: str, visible: dict[int, str], depth: int) -> list[str]:
    """Keys of visible entries whose description matches the query's words, best bm25 first."""
    expr = match_expression(query, operator="OR")
    if expr is None:
        return []
    with read_tx(c):
        return _visible_first(
            c,
            "SELECT rowid FROM context_pool_fts WHERE context_pool_fts MATCH ? ORDER BY rank LIMIT ?",
            (expr,),
            visible,
            depth,
        )


def missing_vectors(c: Any, model: str, seqs: Sequence[int]) -> list[int]:
    """The entries among ``seqs`` with no embedding from ``model`` yet."""
    with read_tx(c):
        have = {
            int(r[0])
            for r in c.execute(
                _IN_VISIBLE,
                (model, _JSON.encode(list(seqs)).decode()),
            )
        }
    return [s for s in seqs if s not in have]


def store_vectors(c: Any, model: str, vectors: Sequence[tuple[int, bytes]]) -> None:
    """Keep embeddings of entries that still exist, in one transaction."""
    with write_tx(c):
        c.executemany(
            "INSERT OR REPLACE INTO context_pool_vectors (seq, model, embedding)"
            " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM context_pool_entries WHERE seq = ?)",
            [(seq, model, blob, seq) for seq, blob in vectors],
        )


def vector_ranking(
    c: Any, model: str, query: bytes, owners: Sequence[int], visible: dict[int, str], depth: int
) -> list[str]:
    """Keys of visible entries by cosine distance of their description's embedding to the
    query, nearest first; ``owners`` are the containers of the pool's chain (a zero vector,
    whose distance is undefined, is left out)."""
    marks = ", ".join("?" * len(owners))
    with read_tx(c):
        if vec_available(c):
            return _visible_first(
                c,
                "SELECT seq FROM (SELECT v.seq AS seq, vec_distance_cosine(v.embedding, ?) AS d"
                " FROM context_pool_vectors v JOIN context_pool_entries e ON e.seq = v.seq"
                f" WHERE v.model = ? AND e.owner IN ({marks})) WHERE d IS NOT NULL ORDER BY d, seq LIMIT ?",
                (query, model, *owners),
                visible,
                depth,
            )
        rows = c.execute(
            _IN_VISIBLE.replace("SELECT seq", "SELECT seq, embedding"),
            (model, _JSON.encode(list(visible)).decode()),
        ).fetchall()
    q = vector_from_blob(query)
    scored = sorted((-cosine(q, v), int(s)) for s, b in rows if any(v := vector_from_blob(b)))
    return [visible[s] for _, s in scored[:depth]]
