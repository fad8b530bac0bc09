"""A search ready to run: its mode, size and filters, the words it asks for, and its bounds.

Bounds (:func:`check_bounds`, every mode, raw or not): FTS5's cost grows with every term of a
query and with every repeat of one (a raw query of one word 400 times ANDs 400 phrases: 24 s on
3,000 messages; a 10 KB quoted phrase took 10 s), and so does the snippet pass after it. So a
query is refused, with a :class:`SearchQueryError` naming the limit, when it is longer than
:data:`MAX_QUERY_CHARS` characters, holds more than :data:`MAX_QUERY_WORDS` words (runs of letters
and digits, as FTS5's tokenizer splits them, a phrase's words included; a raw query's ``AND``,
``OR``, ``NOT`` and ``NEAR`` are not words), repeats one word more than :data:`MAX_WORD_REPEATS`
times, or asks for more than :data:`MAX_PREFIXES` prefixes (``pars*``: each one expands to every
indexed word it starts).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Final, Literal

import msgspec

from axio_context.errors import SearchQueryError

from .fts import MAX_TERMS, TOKEN_CATEGORIES, match_terms, raw_expression

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

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: Final = ("hybrid", "keyword", "semantic")

#: Largest ``k`` a search accepts.
MAX_K: Final = 1000
#: How deep each ranking goes before hybrid fuses them (at least ``k``).
DEPTH: Final = 50

#: Longest query (characters) a search takes.
MAX_QUERY_CHARS: Final = 2_000
#: Most words a query may hold; a person's query keeps at most this many terms anyway.
MAX_QUERY_WORDS: Final = MAX_TERMS
#: Most times one word (case folded) may appear in a query.
MAX_WORD_REPEATS: Final = 4
#: Most prefix searches (``word*``) in a query.
MAX_PREFIXES: Final = 8

_OPERATORS: Final = frozenset({"AND", "OR", "NOT", "NEAR"})


def query_words(text: str, raw: bool) -> tuple[list[str], int]:
    """The words of a query (runs of token characters, a raw query's operators left out) and how
    many of them end in ``*`` (prefix searches)."""
    words: list[str] = []
    prefixes = 0
    run: list[str] = []
    for ch in (*text, " "):
        if unicodedata.category(ch) in TOKEN_CATEGORIES:
            run.append(ch)
            continue
        if run:
            word = "".join(run)
            run.clear()
            if raw and word in _OPERATORS:
                continue
            words.append(word)
            prefixes += ch == "*"
    return words, prefixes


def check_bounds(text: str, raw: bool) -> None:
    """Raise :class:`SearchQueryError` naming the limit when ``text`` is past one of the
    search's bounds (see the module docstring)."""
    what = "raw query" if raw else "search query"
    if len(text) > MAX_QUERY_CHARS:
        raise SearchQueryError(
            f"{what} is {len(text):,} characters long; the limit is {MAX_QUERY_CHARS:,}: shorten it"
        )
    words, prefixes = query_words(text, raw)
    if len(words) > MAX_QUERY_WORDS:
        raise SearchQueryError(
            f"{what} has {len(words)} words; the limit is {MAX_QUERY_WORDS}: keep the telling ones"
        )
    word, times = Counter(w.casefold() for w in words).most_common(1)[0] if words else ("", 0)
    if times > MAX_WORD_REPEATS:
        raise SearchQueryError(
            f"{what} repeats {word!r} {times} times; the limit is {MAX_WORD_REPEATS} repeats of a word"
        )
    if prefixes > MAX_PREFIXES:
        raise SearchQueryError(f"{what} has {prefixes} prefix searches (word*); the limit is {MAX_PREFIXES}")


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
