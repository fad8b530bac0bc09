"""The state of a database's search indexes: model, coverage, and how semantic search runs."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..store import indexing
from ..store.ops import read_tx
from .settings import read_settings

__all__ = ["IndexStatus", "index_status"]


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
