"""Stored text made safe for a terminal: the one function every printer and widget uses.

What an agent stores comes from models and people, so it is untrusted. Printed raw, an ESC
starts a sequence that clears the screen, retitles the window or writes the clipboard (OSC 52);
a C1 control such as U+009B is the same CSI on many terminals; a CR overwrites the line it is
on; a bidi override (U+202E) makes ``exe.txt`` read as ``txt.exe``. :func:`visible` shows each
of them as the escape Python and ``git``'s quoted paths use (``\\x1b``, ``\\x9b``, ``\\u202e``),
so people see that it is there and the terminal acts on none of it. Newlines and tabs are kept
(a transcript keeps its lines); a table cell flattens them itself. Backslashes are not doubled:
``\\x1b`` typed as text reads the same as an escaped ESC; ``--json`` output is the exact value.

:func:`escaped_json` does the same for JSON meant for a terminal, losslessly: JSON escapes C0
itself, and DEL, C1 and bidi controls become ``\\u`` escapes, which decode to the same value.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["UNSAFE", "escaped_json", "visible"]

#: What a terminal acts on: C0 controls but tab and newline, DEL, C1 controls (U+0080-U+009F),
#: and the bidi controls: the Arabic letter mark, LRM/RLM, the embeddings and overrides
#: (U+202A-U+202E) and the isolates (U+2066-U+2069).
UNSAFE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

#: :data:`UNSAFE`, newline and tab: what keeps a message on one line.
_ONE_LINE: Final = re.compile(f"[\t\n{UNSAFE.pattern[1:-1]}]")

#: The same characters outside a JSON string's C0 range (which JSON escapes itself).
_JSON_UNSAFE: Final = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # \r, \x1b, \x9b, \u202e: never a quote or a backslash


def visible(text: str, *, lines: bool = True) -> str:
    """``text`` safe to print on a terminal: every control and bidi character shown as its
    escape (``\\x1b``, ``\\r``, ``\\u202e``); newlines and tabs are kept unless ``lines`` is
    False (one line: an error message), where they are escaped too."""
    return (UNSAFE if lines else _ONE_LINE).sub(_escape, text)


def escaped_json(data: bytes) -> bytes:
    """UTF-8 JSON with DEL, C1 and bidi controls written as ``\\u`` escapes: the same value,
    safe on a terminal. (They can only stand inside strings, where the escape means the same.)"""
    text = data.decode("utf-8", "surrogateescape")
    if not _JSON_UNSAFE.search(text):
        return data
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8", "surrogateescape")
