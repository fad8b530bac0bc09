"""Which lossless format a file is, from its first bytes: a few dozen bytes decide, however long
the first line is, without parsing it (see :func:`sniff_format`)."""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = ["BOM", "sniff_format"]

#: The UTF-8 byte order mark some editors write at the start of a file: not part of the JSON.
BOM: Final = b"\xef\xbb\xbf"


#: One JSON token at the start of what is left: a string (group 1), a structural character
#: (group 2), or a bare scalar; None when the text ends inside a token.
_TOKEN: Final = re.compile(
    rb'[ \t\r\n]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\],:])|[^ \t\r\n{}\[\],:"]+)', re.S
)
_BLANK: Final = b" \t\r\n"


def sniff_format(head: bytes) -> Literal["json", "jsonl"]:
    """Which lossless format a file is, from its first bytes (any prefix of the file).

    Blank leading lines are skipped; then the first object's top-level keys are read one token
    at a time, without needing the whole line: a ``kind`` key means ``jsonl`` (every line of it
    is tagged so), ``sessions`` means ``json``. The writers put those keys first, so a few dozen
    bytes decide however long the first line is (a session line carries every checkpoint
    summary, and can pass any fixed head size). Anything else, or a head cut before either key,
    is ``json``, whose reader then names what is wrong.
    """
    head = head.removeprefix(BOM)
    start = len(head) - len(head.lstrip(_BLANK))
    if head[start : start + 1] != b"{":
        return "json"
    depth, expect_key, at = 1, True, start + 1
    while depth:
        m = _TOKEN.match(head, at)
        if m is None:
            break  # the head ends here (perhaps inside a string)
        at = m.end()
        if m.group(1) is not None:
            if depth == 1 and expect_key:
                if m.group(1) == b'"kind"':
                    return "jsonl"
                if m.group(1) == b'"sessions"':
                    return "json"
                expect_key = False
        elif m.group(2) in (b"{", b"["):
            depth += 1
        elif m.group(2) in (b"}", b"]"):
            depth -= 1
        elif m.group(2) == b",":
            expect_key = depth == 1
    return "json"
