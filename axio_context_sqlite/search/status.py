"""The state of a database's search indexes: model, coverage, and how semantic search runs."""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from ..store import indexing
from ..store.transactions import read_tx
from ..store.vec import code_bits
from .settings import read_settings

__all__ = ["VECTOR_ROW_BYTES", "IndexStatus", "VectorSpace", "index_status", "vector_bytes", "vector_space"]

#: Bytes a stored embedding takes beyond its float32 values (row header, key, b-tree share).
VECTOR_ROW_BYTES: Final = 24
#: Bytes a binary code row takes beyond its bits (rowid map, metadata columns, chunk share).
CODE_ROW_BYTES: Final = 48


def vector_bytes(dimension: int, codes: bool) -> int:
    """About how many bytes one message's embedding (and with ``codes`` its binary code) adds to
    the file: ``dimension`` for the int8 values, ``dimension x 3 / 8`` for the code (three
    rotations' sign bits), plus per-row overhead."""
    per = dimension + VECTOR_ROW_BYTES
    if codes:
        per += code_bits(dimension) // 8 + CODE_ROW_BYTES
    return per


class VectorSpace(msgspec.Struct, frozen=True):
    """Space the embeddings take in the file: ``vectors`` (``message_vectors``) and ``codes``
    (the sqlite-vec tables) in bytes, for ``embedded`` messages; ``measured`` when counted from
    the pages (SQLite's dbstat), else estimated as :func:`vector_bytes` per message."""

    embedded: int
    vectors: int
    codes: int
    measured: bool

    @property
    def total(self) -> int:
        return self.vectors + self.codes


class IndexStatus(msgspec.Struct, frozen=True):
    """The state of a database's search indexes.

    ``messages`` counts stored rows (a fork's inherited messages are its ancestor's rows);
    ``embedded`` those with an embedding (a message without text never gets one). ``semantic``
    says how semantic search runs here: ``vec0`` (binary codes, re-scored), ``exact`` (the
    brute-force scan: sqlite-vec absent or codes stale) or ``none`` (nothing embedded yet).
    """

    model: str | None
    dimension: int | None
    messages: int
    embedded: int
    vec_available: bool
    codes_stale: bool
    semantic: Literal["vec0", "exact", "none"]


def index_status(c: Any) -> IndexStatus:
    """Model, dimension and coverage of the embeddings; which way semantic search runs."""
    with read_tx(c):
        settings = read_settings(c)
        messages = int(c.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
        embedded = int(c.execute("SELECT COUNT(*) FROM message_vectors").fetchone()[0])
        vec = indexing.vec_available(c)
        table = indexing.codes_table_exists(c)
    stale = "codes_stale" in settings or (embedded > 0 and not table)
    model = settings.get("embedding_model")
    semantic: Literal["vec0", "exact", "none"]
    if model is None or embedded == 0:
        semantic = "none"
    elif vec and not stale:
        semantic = "vec0"
    else:
        semantic = "exact"
    dim = settings.get("embedding_dimension")
    return IndexStatus(
        model=model,
        dimension=int(dim) if dim is not None else None,
        messages=messages,
        embedded=embedded,
        vec_available=vec,
        codes_stale=stale,
        semantic=semantic,
    )


def vector_space(c: Any) -> VectorSpace:
    """Bytes the embeddings and their codes take now (see :class:`VectorSpace`)."""
    with read_tx(c):
        embedded = int(c.execute("SELECT COUNT(*) FROM message_vectors").fetchone()[0])
        table = indexing.codes_table_exists(c)
        try:
            pages = dict(
                c.execute(
                    "SELECT name, SUM(pgsize) FROM dbstat WHERE name = 'message_vectors'"
                    f" OR name LIKE '{indexing.CODES_TABLE}%' GROUP BY name"
                ).fetchall()
            )
        except Exception:  # no dbstat in this SQLite build: estimate
            dim = read_settings(c).get("embedding_dimension")
            per = vector_bytes(int(dim), False) if dim is not None else 0
            code = vector_bytes(int(dim), True) - per if dim is not None and table else 0
            return VectorSpace(embedded, embedded * per, embedded * code, measured=False)
    vectors = int(pages.pop("message_vectors", 0) or 0)
    return VectorSpace(embedded, vectors, sum(int(v or 0) for v in pages.values()), measured=True)
