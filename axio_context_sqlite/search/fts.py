"""FTS5 keyword search, the parts that need no store: the text each message is indexed under,
a person's query turned into a MATCH expression that can never be a syntax error, and raw FTS5
syntax for those who ask for it, with its syntax errors turned into :class:`SearchQueryError`.

A message is indexed in two columns so that bm25 can weigh them apart: ``body`` (what people and
the model wrote: text blocks) and ``tool`` (tool names, tool inputs and tool results). With
:data:`BM25_WEIGHTS` a word a person wrote ranks above the same word in a 5 KB grep output.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import sqlean

from axio_context.errors import SearchQueryError

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

#: A query keeps at most this many terms; more would only slow the search down.
MAX_TERMS = 32


# --- a person's query ---------------------------------------------------------------------------

_PHRASE = re.compile(r'"([^"]*)"')
# unicode61's token characters: letters, numbers and private-use code points.
TOKEN_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Co"})


def _clean(text: str) -> str:
    """Control characters, lone surrogates and format characters become spaces: a NUL would end
    the string inside FTS5's parser and a surrogate cannot be encoded for SQLite at all."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Cs", "Cf") else ch for ch in text)


def _has_token(text: str) -> bool:
    return any(unicodedata.category(ch) in TOKEN_CATEGORIES for ch in text)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


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


def match_terms(query: str) -> list[str]:
    """The terms :func:`match_expression` joins: each a quoted FTS5 string (a word or a phrase),
    ``*`` after a prefix; none when the query has no word to search for."""
    text = _clean(query)
    chunks: list[tuple[str, bool]] = []  # (words, is_quoted_phrase)
    last = 0
    for match in _PHRASE.finditer(text):
        chunks.extend((w, False) for w in text[last : match.start()].split())
        chunks.append((match.group(1), True))
        last = match.end()
    chunks.extend((w, False) for w in text[last:].replace('"', " ").split())

    terms: list[str] = []
    seen: set[str] = set()
    for words, phrase in chunks:
        prefix = False
        if not phrase:
            stripped = words.rstrip("*")
            prefix = stripped != words and _has_token(stripped[-1:])
            words = stripped
        if not _has_token(words):
            continue
        term = _quote(words.strip() if phrase else words) + (" *" if prefix else "")
        if term not in seen:
            seen.add(term)
            terms.append(term)
        if len(terms) == MAX_TERMS:
            break
    return terms


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


# A raw expression's tokens: a quoted string, a bareword (what FTS5 takes unquoted: letters,
# digits, "_", code points above 127, U+001A), or one character of syntax.
_RAW_TOKEN = re.compile(r'"(?:[^"]|"")*"?|[\w\x1a\x80-\U0010ffff]+|[(){}:,+*^-]')
_OPERATORS = frozenset({"AND", "OR", "NOT"})


def _opens_group(tokens: list[str], j: int) -> bool:
    """Whether the operand starting at ``tokens[j]`` is a parenthesized group, after any column
    filter (``col:``, ``-col:``, ``{a b}:``)."""
    j += j < len(tokens) and tokens[j] == "-"
    if j < len(tokens) and tokens[j] == "{":
        while j < len(tokens) and tokens[j] != "}":
            j += 1
        j += 1
    elif j + 1 < len(tokens) and tokens[j + 1] == ":":
        j += 1
    j += j < len(tokens) and tokens[j] == ":"
    return j < len(tokens) and tokens[j] == "("


def raw_words(query: str) -> str:
    """The words a raw FTS5 expression asks for, for embedding it: its phrases, without the
    operators, column names, ``NEAR`` distances, and without what ``NOT`` leaves out (the
    operand after ``NOT``: a parenthesized group, or the run of phrases up to the next
    operator, as FTS5 groups them). ``"parser NOT pizza"`` gives ``"parser"``."""
    tokens = _RAW_TOKEN.findall(_clean(query))
    words: list[str] = []
    depth = 0
    # the NOT operand being skipped: ("group", depth it ends at) or ("run", depth it is at)
    negated: tuple[str, int] | None = None
    columns = False  # inside {col1 col2}
    after_comma = False
    for i, tok in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in _OPERATORS:
            if negated is not None and negated == ("run", depth):
                negated = None
            if tok == "NOT" and negated is None:
                negated = ("group", depth) if _opens_group(tokens, i + 1) else ("run", depth)
            continue
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
            if negated is not None and (
                (negated[0] == "group" and depth == negated[1])
                or (negated[0] == "run" and depth < negated[1])
            ):
                negated = None
        elif tok == "{":
            columns = True
        elif tok == "}":
            columns = False
        elif tok[0] == '"' or tok[0] not in "(){}:,+*^-":
            word = tok[1:].removesuffix('"').replace('""', '"') if tok[0] == '"' else tok
            skip = (
                columns
                or following == ":"  # a column name
                or (tok == "NEAR" and following == "(")
                or (after_comma and tok.isdigit())  # NEAR's distance
                or negated is not None
            )
            if not skip and word.strip():
                words.append(word)
        after_comma = tok == ","
    return " ".join(words)


def is_fts_query_error(exc: BaseException) -> bool:
    """True when ``exc`` is SQLite rejecting an FTS5 MATCH expression (not any other failure)."""
    if not isinstance(exc, sqlite3.OperationalError | sqlean.OperationalError):
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
    except (sqlite3.OperationalError, sqlean.OperationalError) as exc:
        if not is_fts_query_error(exc):
            raise
        raise SearchQueryError(f"invalid FTS5 query {query!r}: {exc}") from exc
