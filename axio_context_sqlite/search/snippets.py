"""Snippets of search hits: the hit's text around the tokens a MATCH expression matched.

``messages_fts`` is contentless, so FTS5's ``snippet()`` has no text to cut. The hits' rows are
decoded (by the caller) and put in a temporary FTS5 table with the same tokenizer (in the
connection's ``temp`` schema: the database file is not written), and ``snippet()`` there, with
the same MATCH expression, marks exactly the tokens FTS5 matched: Porter stems, prefixes,
phrases, ``NEAR``. A hit with no matching word (found by meaning alone) shows the start of its
text (:func:`excerpt`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from .fts import FTS_TOKENIZE

__all__ = ["EXCERPT_CHARS", "SNIPPET_SCAN_MAX", "SNIPPET_TEXT_MAX", "SNIPPET_TOKENS", "excerpt", "find"]

#: Tokens of context in a snippet, and characters of the excerpt shown for a hit found by meaning.
SNIPPET_TOKENS: Final = 24
EXCERPT_CHARS: Final = 160
#: Characters per column put in the snippet table (bounds the cost of a huge tool output).
SNIPPET_TEXT_MAX: Final = 65_536
#: Characters past the first :data:`SNIPPET_TEXT_MAX` of each column that one search tokenizes
#: looking for a late match; hits past the budget show their start.
SNIPPET_SCAN_MAX: Final = 8 * 1024 * 1024

_SNIPPETS: Final = "axio_snippets"
_OPEN, _CLOSE = "\x01", "\x02"
# Control characters become spaces before text enters the snippet table: unicode61 treats them
# as separators anyway, and it frees two of them to mark matches.
_CONTROL: Final = {i: " " for i in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)}
_SPACE = re.compile(r"\s+")


def find(
    c: Any, texts: dict[int, tuple[str, str]], expression: str | None, late: Sequence[int] = ()
) -> dict[int, tuple[str, list[tuple[int, int]]]]:
    """FTS5 ``snippet()`` of each text that ``expression`` matches, as (plain text, highlights).

    Each column goes in cut to its first :data:`SNIPPET_TEXT_MAX` characters. The texts ``late``
    names (known to match, best first) are then looked for past that, window by window
    (:func:`_late_snippet`), until :data:`SNIPPET_SCAN_MAX` characters have been scanned."""
    if expression is None or not texts:
        return {}
    c.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_SNIPPETS}"
        f" USING fts5(body, tool, tokenize = '{FTS_TOKENIZE}')"
    )
    try:
        found = _snippet_rows(
            c,
            [(mid, body[:SNIPPET_TEXT_MAX], tool[:SNIPPET_TEXT_MAX]) for mid, (body, tool) in texts.items()],
            expression,
        )
        budget = SNIPPET_SCAN_MAX
        for mid in late:
            text = texts[mid]
            if mid in found or max(map(len, text)) <= SNIPPET_TEXT_MAX:
                continue
            marked, scanned = _late_snippet(c, text, expression, budget)
            budget -= scanned
            if marked is not None:
                found[mid] = marked
            if budget <= 0:
                break
    finally:
        c.execute(f"DELETE FROM temp.{_SNIPPETS}")
    return {mid: _unmark(text) for mid, text in found.items()}


def _snippet_rows(c: Any, rows: Sequence[tuple[int, str, str]], expression: str) -> dict[int, str]:
    """Put ``(rowid, body, tool)`` in the snippet table (alone) and return the marked snippet of
    each row ``expression`` matches."""
    c.execute(f"DELETE FROM temp.{_SNIPPETS}")
    c.executemany(
        f"INSERT INTO temp.{_SNIPPETS} (rowid, body, tool) VALUES (?, ?, ?)",
        [(rowid, body.translate(_CONTROL), tool.translate(_CONTROL)) for rowid, body, tool in rows],
    )
    found = c.execute(
        f"SELECT rowid, snippet({_SNIPPETS}, -1, ?, ?, '…', ?) FROM temp.{_SNIPPETS}"
        f" WHERE {_SNIPPETS} MATCH ?",
        (_OPEN, _CLOSE, SNIPPET_TOKENS, expression),
    ).fetchall()
    return {int(rowid): str(text) for rowid, text in found}


#: Characters consecutive snippet windows share, so that a phrase or a NEAR group across a
#: window's end is whole in the next one.
_WINDOW_OVERLAP: Final = 4096
#: Windows put in the snippet table at a time while looking for a late match.
_WINDOW_BATCH: Final = 16


def _late_snippet(c: Any, text: tuple[str, str], expression: str, budget: int) -> tuple[str | None, int]:
    """The marked snippet of the first :data:`SNIPPET_TEXT_MAX`-character window of a column
    (after the first) that ``expression`` matches, with ``…`` where the window cuts the text,
    and the characters scanned; None when no window within ``budget`` characters matches (or
    a match spans windows, or holds only across them)."""
    step = SNIPPET_TEXT_MAX - _WINDOW_OVERLAP
    windows: list[tuple[int, int]] = sorted(
        (start, column) for column, t in enumerate(text) for start in range(step, len(t), step)
    )
    scanned = 0
    for first in range(0, len(windows), _WINDOW_BATCH):
        rows: list[tuple[int, str, str]] = []
        cuts: dict[int, tuple[bool, bool]] = {}
        for n, (start, column) in enumerate(windows[first : first + _WINDOW_BATCH], first):
            if scanned >= budget:
                break
            source = text[column]
            space = source.find(" ", start, start + 64)
            begin = space + 1 if space >= 0 else start  # start at a word where one is near
            piece = source[begin : start + SNIPPET_TEXT_MAX]
            scanned += len(piece)
            rows.append((n, piece, "") if column == 0 else (n, "", piece))
            cuts[n] = (True, start + SNIPPET_TEXT_MAX < len(source))
        if not rows:
            break
        found = _snippet_rows(c, rows, expression)
        if found:
            n = min(found)
            marked = found[n]
            head, tail = cuts[n]
            if head and not marked.startswith("…"):
                marked = "…" + marked
            if tail and not marked.endswith("…"):
                marked += "…"
            return marked, scanned
    return None, scanned


def _unmark(marked: str) -> tuple[str, list[tuple[int, int]]]:
    """Plain text (whitespace collapsed) and the character ranges between the markers."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    start: int | None = None
    pending_space = False
    for ch in marked:
        if ch == _OPEN:
            if pending_space and out:
                out.append(" ")
                pos += 1
            pending_space = False
            start = pos
        elif ch == _CLOSE:
            if start is not None and pos > start:
                spans.append((start, pos))
            start = None
        elif ch.isspace():
            pending_space = True
        else:
            if pending_space and out:
                out.append(" ")
                pos += 1
            pending_space = False
            out.append(ch)
            pos += 1
    return "".join(out), spans


def excerpt(text: tuple[str, str]) -> tuple[str, list[tuple[int, int]]]:
    """The start of a message's text (body first), cut at a word near EXCERPT_CHARS."""
    source = text[0] if text[0].strip() else text[1]
    flat = _SPACE.sub(" ", source[: EXCERPT_CHARS * 4]).strip()
    if len(flat) <= EXCERPT_CHARS:
        return flat, []
    cut = flat.rfind(" ", EXCERPT_CHARS // 2, EXCERPT_CHARS)
    return flat[: cut if cut > 0 else EXCERPT_CHARS].rstrip() + " …", []
