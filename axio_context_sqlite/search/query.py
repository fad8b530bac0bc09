"""A search ready to run: its mode, size and filters, and the FTS5 expression of its words.

The words, the terms and the bounds every search keeps are the core's
(:mod:`axio_context.search.query`), re-exported here.
"""

from __future__ import annotations

import msgspec

from axio_context.search.query import (
    DEPTH,
    MAX_K,
    MAX_PREFIXES,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    MAX_WORD_REPEATS,
    MODES,
    Mode,
    check_bounds,
    query_words,
)

from .fts import match_terms, raw_expression

__all__ = [
    "DEPTH",
    "MAX_K",
    "MAX_PREFIXES",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_WORDS",
    "MAX_WORD_REPEATS",
    "MODES",
    "Mode",
    "Query",
    "check_bounds",
    "keyword_part",
    "query_words",
]


def keyword_part(text: str, mode: Mode, raw: bool) -> tuple[str | None, list[str] | None]:
    """The MATCH expression of a search and the terms it ORs together (None for a raw query).

    A raw expression filters every mode; a person's words make the keyword part of the keyword
    and hybrid modes only (and can never be a syntax error)."""
    if raw:
        return raw_expression(text), None
    if mode == "semantic":
        return None, None
    terms = match_terms(text)
    return (" OR ".join(terms) if terms else None), terms


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
    agent_id: str | None = None  # messages of this agent's sessions only (agent runtime layer)
    run_id: str | None = None  # messages of this run only
