"""A person's search query, the same on every backend: its words and terms, the words a raw
expression asks for, and the bounds every search keeps.

A person's words become quoted terms (:func:`match_terms`) that a keyword index takes as plain
words, never as syntax: SQLite joins them into an FTS5 MATCH expression, PostgreSQL into a
tsquery. Bounds (:func:`check_bounds`, every mode, raw or not): a keyword search's cost grows
with every term of a query and with every repeat of one (a raw FTS5 query of one word 400 times
ANDs 400 phrases: 24 s on 3,000 messages; a 10 KB quoted phrase took 10 s), and so does the
snippet pass after it. So a query is refused, with a :class:`SearchQueryError` naming the limit,
when it is longer than :data:`MAX_QUERY_CHARS` characters, holds more than
:data:`MAX_QUERY_WORDS` words (runs of letters and digits, as FTS5's tokenizer splits them, a
phrase's words included; a raw query's ``AND``, ``OR``, ``NOT`` and ``NEAR`` are not words),
repeats one word more than :data:`MAX_WORD_REPEATS` times, or asks for more than
:data:`MAX_PREFIXES` prefixes (``pars*``: each one expands to every indexed word it starts).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Final, Literal

from ..errors import SearchQueryError

__all__ = [
    "DEPTH",
    "MAX_K",
    "MAX_PREFIXES",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_WORDS",
    "MAX_TERMS",
    "MAX_WORD_REPEATS",
    "MODES",
    "TOKEN_CATEGORIES",
    "Mode",
    "check_bounds",
    "clean",
    "match_terms",
    "query_words",
    "raw_words",
]

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: Final = ("hybrid", "keyword", "semantic")

#: Largest ``k`` a search accepts.
MAX_K: Final = 1000
#: How deep each ranking goes before hybrid fuses them (at least ``k``).
DEPTH: Final = 50

#: A query keeps at most this many terms; more would only slow the search down.
MAX_TERMS = 32

_PHRASE = re.compile(r'"([^"]*)"')
# unicode61's token characters: letters, numbers and private-use code points.
TOKEN_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Co"})


def clean(text: str) -> str:
    """Control characters, lone surrogates and format characters become spaces: a NUL would end
    the string inside FTS5's parser and a surrogate cannot be encoded for SQLite at all."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Cs", "Cf") else ch for ch in text)


def _has_token(text: str) -> bool:
    return any(unicodedata.category(ch) in TOKEN_CATEGORIES for ch in text)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def match_terms(query: str) -> list[str]:
    """A person's search words as terms: each a quoted FTS5 string (a word, or the text between
    a pair of double quotes as one phrase; an unpaired quote is ignored), `` *`` after a word
    ending in ``*`` (a prefix search); none when the query has no word to search for. Quoted,
    ``NEAR``, ``AND``/``OR``/``NOT``, ``-``, ``^``, ``col:``, parentheses and SQL are searched
    for as plain words."""
    text = clean(query)
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


# A raw expression's tokens: a quoted string, a bareword (what FTS5 takes unquoted: letters,
# digits, "_", code points above 127, U+001A), or one character of syntax.
_RAW_TOKEN = re.compile(r'"(?:[^"]|"")*"?|[\w\x1a\x80-\U0010ffff]+|[(){}:,+*^-]')
_RAW_OPERATORS = frozenset({"AND", "OR", "NOT"})


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
    tokens = _RAW_TOKEN.findall(clean(query))
    words: list[str] = []
    depth = 0
    # the NOT operand being skipped: ("group", depth it ends at) or ("run", depth it is at)
    negated: tuple[str, int] | None = None
    columns = False  # inside {col1 col2}
    after_comma = False
    for i, tok in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in _RAW_OPERATORS:
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


#: Longest query (characters) a search takes.
MAX_QUERY_CHARS: Final = 2_000
#: Most words a query may hold; a person's query keeps at most this many terms anyway.
MAX_QUERY_WORDS: Final = MAX_TERMS
#: Most times one word (case folded) may appear in a query.
MAX_WORD_REPEATS: Final = 4
#: Most prefix searches (``word*``) in a query.
MAX_PREFIXES: Final = 8

_WORD_OPERATORS: Final = frozenset({"AND", "OR", "NOT", "NEAR"})


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
            if raw and word in _WORD_OPERATORS:
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
