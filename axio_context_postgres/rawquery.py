"""Raw FTS5 query syntax (what ``search --raw`` takes on SQLite) compiled to a PostgreSQL
``tsquery``, so the same raw query runs on both backends.

The grammar is FTS5's: ``OR`` below implicit or explicit ``AND`` below binary ``NOT`` (``a NOT
b`` is ``a & !b``), parentheses, ``"phrases"`` and barewords (words in a row: ``<->``), a
trailing ``*`` for a prefix (``:*``), column filters ``body:``, ``tool:``, ``-col:`` and
``{body tool}:`` (the ``tsv`` weights A and D), and ``NEAR(a b, N)`` for two phrases at most
``N`` words apart (default 10; ``<1>`` ... ``<N+1>`` either way). What FTS5 refuses, or what
has no ``tsquery`` meaning (``^``, ``NEAR`` of three phrases), is a :class:`SearchQueryError`
("invalid FTS5 query ...") before anything reaches the server: a raw query never produces a
server syntax error.
"""

from __future__ import annotations

import re
from typing import Final

from axio_context.errors import SearchQueryError

__all__ = ["COLUMN_WEIGHTS", "raw_tsquery"]

#: The columns a raw query may name, and the ``tsvector`` weight each is indexed under.
COLUMN_WEIGHTS: Final = {"body": "A", "tool": "D"}
#: NEAR's distance when none is given (FTS5's default).
NEAR_DEFAULT: Final = 10
#: Largest NEAR distance taken (each step is one more alternative in the tsquery).
NEAR_MAX: Final = 64

_TOKEN: Final = re.compile(r'"(?:[^"]|"")*"?|[\w\x1a\x80-\U0010ffff]+|[(){}:,+*^-]|\S')
_WORD: Final = re.compile(r"[^\W_]+")
_STRING: Final = re.compile(r'"(?:[^"]|"")*"')
_OPERATORS: Final = frozenset({"AND", "OR", "NOT"})


def _lexeme(word: str, weights: str, prefix: bool) -> str:
    quoted = "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
    label = ("*" if prefix else "") + weights
    return f"{quoted}:{label}" if label else quoted


class _Parser:
    def __init__(self, query: str) -> None:
        self.query = query
        cleaned = "".join(" " if ord(ch) < 32 else ch for ch in query)
        self.tokens = _TOKEN.findall(cleaned)
        self.i = 0

    def error(self, why: str) -> SearchQueryError:
        return SearchQueryError(f"invalid FTS5 query {self.query!r}: {why}")

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.error("syntax error near the end")
        self.i += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.peek()
        if got != tok:
            raise self.error(f"syntax error near {got!r}" if got else f"expected {tok!r} at the end")
        self.i += 1

    def starts_primary(self) -> bool:
        tok = self.peek()
        return tok is not None and tok not in _OPERATORS and tok not in (")", ",", "}", ":", "*", "+")

    # or := and ('OR' and)* ; and := not (['AND'] not)* ; not := primary ('NOT' primary)*
    def parse(self) -> str:
        if not self.tokens:
            raise self.error("empty query")
        out = self.or_("")
        if self.peek() is not None:
            raise self.error(f"syntax error near {self.peek()!r}")
        return out

    def or_(self, weights: str) -> str:
        parts = [self.and_(weights)]
        while self.peek() == "OR":
            self.take()
            parts.append(self.and_(weights))
        return parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"

    def and_(self, weights: str) -> str:
        parts = [self.not_(weights)]
        while self.peek() == "AND" or self.starts_primary():
            if self.peek() == "AND":
                self.take()
            parts.append(self.not_(weights))
        return parts[0] if len(parts) == 1 else "(" + " & ".join(parts) + ")"

    def not_(self, weights: str) -> str:
        out = self.primary(weights)
        while self.peek() == "NOT":
            self.take()
            out = f"({out} & !{self.primary(weights)})"
        return out

    def columns(self) -> str | None:
        """The weights of a column filter starting here (consumed), or None if there is none."""
        start = self.i
        negate = self.peek() == "-"
        if negate:
            self.take()
        names: list[str] = []
        tok = self.peek()
        if tok == "{":
            self.take()
            while self.peek() not in ("}", None):
                names.append(self.take())
            self.expect("}")
        elif (
            tok is not None
            and _WORD.fullmatch(tok)
            and self.i + 1 < len(self.tokens)
            and self.tokens[self.i + 1] == ":"
        ):
            names.append(self.take())
        else:
            self.i = start
            return None
        self.expect(":")
        for name in names:
            if name not in COLUMN_WEIGHTS:
                raise self.error(f"no such column: {name}")
        chosen = {COLUMN_WEIGHTS[n] for n in names}
        if negate:
            chosen = set(COLUMN_WEIGHTS.values()) - chosen
        if not chosen:
            raise self.error("the column filter leaves no column")
        return "".join(sorted(chosen))

    def primary(self, weights: str) -> str:
        filtered = self.columns()
        if filtered is not None:
            weights = "".join(sorted(set(filtered) & set(weights))) if weights else filtered
            if not weights:
                raise self.error("nested column filters leave no column")
        tok = self.peek()
        if tok == "(":
            self.take()
            inner = self.or_(weights)  # a column filter before a group covers all of it
            self.expect(")")
            return inner
        if tok == "NEAR" and self.i + 1 < len(self.tokens) and self.tokens[self.i + 1] == "(":
            return self.near(weights)
        if tok == "^":
            raise self.error("'^' (start of column) has no PostgreSQL equivalent")
        return self.phrase(weights)

    def phrase(self, weights: str) -> str:
        words: list[str] = []
        while True:
            tok = self.take()
            if tok.startswith('"'):
                if not _STRING.fullmatch(tok):
                    raise self.error("unterminated string")
                words.extend(_WORD.findall(tok[1:-1].replace('""', '"')))
            elif _WORD.search(tok) and tok not in _OPERATORS:
                words.extend(_WORD.findall(tok))
            else:
                raise self.error(f"syntax error near {tok!r}")
            if self.peek() != "+":
                break
            self.take()
        prefix = self.peek() == "*"
        if prefix:
            self.take()
        if not words:
            raise self.error("a phrase with no word to search for")
        lexemes = [_lexeme(w, weights, prefix and n == len(words) - 1) for n, w in enumerate(words)]
        return lexemes[0] if len(lexemes) == 1 else "(" + " <-> ".join(lexemes) + ")"

    def near(self, weights: str) -> str:
        self.take()
        self.expect("(")
        phrases: list[str] = []
        distance = NEAR_DEFAULT
        while self.peek() not in (")", ",", None):
            phrases.append(self.phrase(weights))
        if self.peek() == ",":
            self.take()
            tok = self.take()
            if not tok.isdigit():
                raise self.error(f"expected integer, got {tok!r}")
            distance = int(tok)
        self.expect(")")
        if not phrases:
            raise self.error("NEAR with no phrase")
        if len(phrases) == 1:
            return phrases[0]
        if len(phrases) > 2:
            raise self.error("NEAR of more than two phrases has no PostgreSQL equivalent")
        if distance > NEAR_MAX:
            raise self.error(f"NEAR distance {distance} is past the limit of {NEAR_MAX}")
        a, b = phrases
        steps = [f"{x} <{d}> {y}" for d in range(1, distance + 2) for x, y in ((a, b), (b, a))]
        return "(" + " | ".join(steps) + ")"


def raw_tsquery(query: str) -> str:
    """The ``to_tsquery('simple', ...)`` text of a raw FTS5 query; :class:`SearchQueryError`
    ("invalid FTS5 query ...: why") when FTS5 would refuse it or PostgreSQL cannot say it."""
    return _Parser(query).parse()
