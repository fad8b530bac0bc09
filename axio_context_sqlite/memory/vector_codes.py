"""Which documents carry a binary code: a collection's codes are written once it is large.

A search normally ranks a collection by an exact scan of its embeddings held in memory
(:mod:`.vector_scan`); the codes only serve a collection that is not held (past the memory
limit, or beside others that fill it). A small collection's codes are therefore never read, yet
computing them was the largest part of an insert (16 us a 384-d vector, against 0.3 s for
LangGraph's whole 10,000-vector insert). So a new collection's documents are stored with an
empty code, and the collection is counted (``settings`` row ``vector-codes:<id>``: the documents
added so far, an upper bound: deletes do not lower it; an upsert of a stored id adds none).
When that count's embeddings pass :data:`CODED_FROM`, the write that crosses it codes every
document still without one, in its transaction, and the row turns ``coded``: from then on
every document is coded as it is written. A collection with no row (written before this rule) is coded.

So a collection is either coded (every document) or not (none, or only those an older version
coded): the codes' search (:func:`coded` tells which) ranks a coded one by the codes and
re-scores the candidates, and re-scores every document of an uncoded one exactly, without a
second pass over the collection for documents that cannot be there.
"""

from __future__ import annotations

from typing import Any, Final

from ..store.vec import binary_codes

__all__ = ["CODED_FROM", "UNCODED", "admit", "begin", "coded"]

#: Embedding bytes from which a collection keeps codes (64 MiB: 43,690 documents of 384 dimensions).
CODED_FROM: Final = 64 * 2**20
#: The code of a document written while its collection is small.
UNCODED: Final = b""
_CODED: Final = "coded"
_BATCH: Final = 4096


def _key(cid: int) -> str:
    return f"vector-codes:{cid}"


def begin(c: Any, cid: int) -> None:
    """Count the new collection ``cid`` from zero (inside the transaction that creates it)."""
    c.execute(
        "INSERT INTO settings (key, value) VALUES (?, '0') ON CONFLICT (key) DO UPDATE SET value = '0'",
        (_key(cid),),
    )


def coded(c: Any, cid: int) -> bool:
    """Whether every document of ``cid`` has a code (no count row: written before the rule)."""
    row = c.execute("SELECT value FROM settings WHERE key = ?", (_key(cid),)).fetchone()
    return row is None or row[0] == _CODED


def admit(c: Any, cid: int, added: int, dimension: int) -> bool:
    """Whether the ``added`` documents about to be written to ``cid`` get codes; the write that
    takes the collection past :data:`CODED_FROM` first codes the documents it already holds."""
    row = c.execute("SELECT value FROM settings WHERE key = ?", (_key(cid),)).fetchone()
    if row is None or row[0] == _CODED:
        return True
    total = int(row[0]) + added
    if total * dimension * 4 <= CODED_FROM:
        c.execute("UPDATE settings SET value = ? WHERE key = ?", (str(total), _key(cid)))
        return False
    _code_all(c, cid, dimension)
    c.execute("UPDATE settings SET value = ? WHERE key = ?", (_CODED, _key(cid)))
    return True


def _code_all(c: Any, cid: int, dimension: int) -> None:
    import numpy as np

    rows = c.execute(
        "SELECT d.rowid, e.embedding FROM memory_documents AS d JOIN memory_embeddings AS e"
        " ON e.rowid = d.rowid WHERE d.collection = ? AND length(d.code) = 0",
        (cid,),
    ).fetchall()
    for lo in range(0, len(rows), _BATCH):
        part = rows[lo : lo + _BATCH]
        matrix = np.frombuffer(b"".join(r[1] for r in part), dtype=np.float32).reshape(len(part), dimension)
        c.executemany(
            "UPDATE memory_documents SET code = ? WHERE rowid = ?",
            [(code, r[0]) for code, r in zip(binary_codes(matrix), part, strict=True)],
        )
