"""A search ready to run: its mode, size and filters, and the words it asks for."""

from __future__ import annotations

from typing import Final, Literal

import msgspec

__all__ = ["DEPTH", "MAX_K", "MODES", "Mode", "Query"]

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: Final = ("hybrid", "keyword", "semantic")

#: Largest ``k`` a search accepts.
MAX_K: Final = 1000
#: How deep each ranking goes before hybrid fuses them (at least ``k``).
DEPTH: Final = 50


class Query(msgspec.Struct, frozen=True):
    """A search, ready for :func:`search`: the expression and vector are computed beforehand."""

    text: str
    mode: Mode
    k: int
    match: str | None  # FTS5 expression of the keyword part, or with ``raw`` the filter of every part
    raw: bool
    terms: list[str] | None  # the terms ``match`` ORs together (None for a raw query)
    vector: bytes | None  # float32 embedding of the query (None: no semantic part)
    model: str | None
    dimension: int | None
    project: str | None = None
    session_id: str | None = None
    role: int | None = None
    since_ms: int | None = None
