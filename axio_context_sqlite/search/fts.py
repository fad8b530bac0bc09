"""FTS5 keyword search, the parts that need no store: the text each message is indexed under,
a person's query turned into a MATCH expression that can never be a syntax error, and raw FTS5
syntax for those who ask for it, with its syntax errors turned into :class:`SearchQueryError`.

A message is indexed in two columns so that bm25 can weigh them apart: ``body`` (what people and
the model wrote: text blocks) and ``tool`` (tool names, tool inputs and tool results). With
:data:`BM25_WEIGHTS` a word a person wrote ranks above the same word in a 5 KB grep output.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from axio_context.errors import SearchQueryError
from axio_context.search.query import MAX_TERMS, TOKEN_CATEGORIES, match_terms, raw_words

from ..store.driver import driver_errors

__all__ = [
    "BM25_WEIGHTS",
    "FTS_TOKENIZE",
    "MAX_TERMS",
    "TOKEN_CATEGORIES",
    "fts_errors",
    "is_fts_query_error",
    "match_expression",
    "match_terms",
    "raw_expression",
    "raw_words",
]

#: Tokenizer of the FTS5 table: Porter stemming over unicode61 ("fixing" finds "fixed"),
#: diacritics folded ("cafe" finds "café"). Chosen on tests/data/retrieval.json (see the tests).
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"

#: bm25 weights of the (body, tool) columns: people's words count four times tool output's.
BM25_WEIGHTS = (1.0, 0.25)

# --- a person's query ---------------------------------------------------------------------------


def match_expression(query: str, *, operator: Literal["AND", "OR"] = "OR") -> str | None:
    """A person's search words as an FTS5 MATCH expression that cannot be a syntax error.

    Every word becomes a quoted FTS5 string, so ``NEAR``, ``AND``/``OR``/``NOT``, ``-``,
    ``^``, ``col:``, parentheses and SQL are searched for as plain words; FTS5's tokenizer then
    splits a quoted word into a phrase, so ``src/parser.py`` finds those three words in a row.
    Text between a pair of double quotes is kept as one phrase; an unpaired quote is ignored.
    A word that ends in ``*`` (``pars*``) is a prefix search; it matches Porter stems, so a
    prefix longer than a word's stem misses it ("tokeniz*" does not find "tokenizer", stored
    as "token"; "tok*" and "tokenize*" do). Terms are joined with ``operator``:
    ``OR`` lets bm25 rank messages with more of the words first; ``AND`` wants them all.
    Returns None when the query has no word to search for (the search then finds nothing).
    """
    if operator not in ("AND", "OR"):
        raise ValueError(f"operator must be 'AND' or 'OR', got {operator!r}")
    terms = match_terms(query)
    if not terms:
        return None
    return f" {operator} ".join(terms)


# --- raw FTS5 syntax ----------------------------------------------------------------------------

# What SQLite says when an FTS5 expression is bad, as opposed to a locked or broken database.
_FTS_ERROR_PREFIXES = (
    "fts5:",
    "fts5 ",
    "unterminated string",
    "no such column",
    "unknown special query",
    "expected integer",
    "parse error in",
)


def raw_expression(query: str) -> str | None:
    """A raw FTS5 query, checked only for what SQLite cannot even receive (a lone surrogate);
    None when it is blank. Run it inside :func:`fts_errors` for FTS5's own syntax errors."""
    if not query.strip():
        return None
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SearchQueryError(
            f"invalid FTS5 query {query!r}: "
            f"character {exc.object[exc.start]!r} at {exc.start} is not valid text"
        ) from None
    return query


def is_fts_query_error(exc: BaseException) -> bool:
    """True when ``exc`` is SQLite rejecting an FTS5 MATCH expression (not any other failure)."""
    if not isinstance(exc, driver_errors("OperationalError")):
        return False
    message = str(exc)
    return message.startswith(_FTS_ERROR_PREFIXES)


@contextmanager
def fts_errors(query: str) -> Iterator[None]:
    """Run a raw FTS5 query inside this to get :class:`SearchQueryError` instead of SQLite's error.

    Works around ``await cursor.fetchall()`` too: the exception passes through unchanged unless
    it is an FTS5 expression error.
    """
    try:
        yield
    except driver_errors("OperationalError") as exc:
        if not is_fts_query_error(exc):
            raise
        raise SearchQueryError(f"invalid FTS5 query {query!r}: {exc}") from exc
