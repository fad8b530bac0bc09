"""Vector search by an exact scan in memory: each connection keeps a collection's embeddings as
one float32 matrix of unit rows (NumPy), so a search is one matrix-vector product over every
document the filter lets through, and its hits are the exact cosine ranking (recall 1.0 on any
vectors, random ones included, where the binary codes' coarse pass kept 0.78 at 10,000).

The copy is kept on the raw connection and checked before each search: it is still right while
``PRAGMA data_version`` (another connection's commit) and the connection's ``total_changes()``
(its own writes) have not moved; when they have, the collection's write mark in ``settings``
(``vectors:<id>``, a fresh value written by every change to that collection) says whether this
collection changed or something else did. A collection past :data:`MAX_BYTES` of embeddings is
not copied (the codes' path answers, as before); nor is anything without NumPy.
"""

from __future__ import annotations

import os
import secrets
from typing import Any, Final

__all__ = ["MAX_BYTES", "mark_changed", "nearest"]

#: The most embedding bytes one connection keeps in memory across its collections (512 MiB:
#: 350,000 documents of 384 dimensions); ``AXIO_CONTEXT_VECTOR_MEMORY`` (bytes) overrides it.
MAX_BYTES: Final = int(os.environ.get("AXIO_CONTEXT_VECTOR_MEMORY", 512 * 2**20))
_ATTRIBUTE: Final = "_axio_vector_copies"


def mark_key(cid: int) -> str:
    """The ``settings`` key of collection ``cid``'s write mark."""
    return f"vectors:{cid}"


def mark_changed(c: Any, cid: int) -> None:
    """Record that collection ``cid`` changed (inside the writing transaction)."""
    c.execute(
        "INSERT INTO settings (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (mark_key(cid), secrets.token_hex(8)),
    )


class _Copy:
    """One collection's embeddings: rowids, unit rows, and what they were read at."""

    __slots__ = ("mark", "matrix", "rowids", "token")

    def __init__(self, token: tuple[int, int], mark: str | None, rowids: Any, matrix: Any) -> None:
        self.token, self.mark, self.rowids, self.matrix = token, mark, rowids, matrix


def _token(c: Any) -> tuple[int, int]:
    return int(c.execute("PRAGMA data_version").fetchone()[0]), int(c.total_changes)


def _mark(c: Any, cid: int) -> str | None:
    row = c.execute("SELECT value FROM settings WHERE key = ?", (mark_key(cid),)).fetchone()
    return None if row is None else str(row[0])


def _copy(c: Any, cid: int, dimension: int) -> _Copy | None:
    """The collection's copy, current (read again when it changed); None past the limit."""
    import numpy as np

    copies: dict[int, _Copy] = getattr(c, _ATTRIBUTE, None) or {}
    setattr(c, _ATTRIBUTE, copies)
    token = _token(c)
    held = copies.get(cid)
    if held is not None and held.token == token:
        return held
    mark = _mark(c, cid)
    if held is not None and mark is not None and held.mark == mark:
        held.token = token
        return held
    count = int(c.execute("SELECT COUNT(*) FROM memory_documents WHERE collection = ?", (cid,)).fetchone()[0])
    others = sum(v.matrix.nbytes for k, v in copies.items() if k != cid)
    if others + count * dimension * 4 > MAX_BYTES:
        copies.pop(cid, None)
        return None
    rows = c.execute(
        "SELECT d.rowid, e.embedding FROM memory_documents AS d JOIN memory_embeddings AS e"
        " ON e.rowid = d.rowid WHERE d.collection = ? ORDER BY d.rowid",
        (cid,),
    ).fetchall()
    rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    blobs = [r[1] for r in rows]
    if any(len(b) != dimension * 4 for b in blobs):  # a row this layout does not hold: codes answer
        copies.pop(cid, None)
        return None
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), dimension).copy()
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    held = copies[cid] = _Copy(token, mark, rowids, matrix)
    return held


def nearest(
    c: Any, cid: int, dimension: int, query: bytes, allowed: list[int] | None, limit: int
) -> list[tuple[int, float]] | None:
    """The ``limit`` nearest documents by cosine as ``(rowid, similarity)``, best first, every
    one tied with the last included (the caller breaks ties by id); ``allowed``: only these
    rowids (a filter's matches). None when the collection is not held in memory."""
    import numpy as np

    held = _copy(c, cid, dimension)
    if held is None:
        return None
    q = np.frombuffer(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    if not held.rowids.size:
        return []
    scores = held.matrix @ (q / norm if norm > 0 else q)
    if allowed is not None:
        keep = np.isin(held.rowids, np.asarray(allowed, dtype=np.int64))
        scores = np.where(keep, scores, -np.inf)
        available = int(keep.sum())
    else:
        available = len(scores)
    k = min(limit, available)
    if k <= 0:
        return []
    if k < len(scores):
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        picked = np.flatnonzero(scores >= kth)
    else:
        picked = np.flatnonzero(scores > -np.inf)
    picked = picked[np.argsort(-scores[picked], kind="stable")]
    return [(int(held.rowids[i]), float(scores[i])) for i in picked]
