"""The edits an agent makes to a block's text, with Letta's semantics (``memory_insert``,
``memory_replace``, ``core_memory_append``): pure functions from the old value to the new one,
raising :class:`~.errors.BlockInputError` with a line the model can act on."""

from __future__ import annotations

import difflib

from .errors import BlockInputError

__all__ = ["appended", "diff_text", "inserted", "replaced"]


def appended(value: str, text: str) -> str:
    """``text`` on a new line after ``value`` (just ``text`` when the block is empty)."""
    return f"{value}\n{text}" if value else text


def inserted(label: str, value: str, text: str, line: int = -1) -> str:
    """``text`` inserted after line ``line`` of ``value`` (0: before the first line; -1: at the end)."""
    if isinstance(line, bool) or not isinstance(line, int):
        raise BlockInputError(f"insert_line must be a whole number, got {line!r}")
    if not value:
        if line not in (-1, 0):
            raise BlockInputError(f"block {label!r} is empty: insert_line must be 0 or -1, got {line}")
        return text
    lines = value.split("\n")
    at = len(lines) if line == -1 else line
    if not 0 <= at <= len(lines):
        raise BlockInputError(
            f"insert_line {line} is outside block {label!r}: use 0 to {len(lines)}, or -1 for the end"
        )
    return "\n".join([*lines[:at], *text.split("\n"), *lines[at:]])


def replaced(label: str, value: str, old: str, new: str) -> str:
    """``value`` with its one occurrence of ``old`` made ``new``; none, or several, is an error."""
    if not old:
        raise BlockInputError("old_str must not be empty")
    count = value.count(old)
    if count == 0:
        raise BlockInputError(
            f"no replacement was made: old_str {old!r} does not appear verbatim in block {label!r}"
        )
    if count > 1:
        raise BlockInputError(
            f"no replacement was made: old_str {old!r} appears {count} times in block {label!r};"
            " give more of the text around it so it is unique"
        )
    return value.replace(old, new, 1)


def diff_text(label: str, old: str, new: str, a: int, b: int) -> str:
    """A unified diff (difflib) of a block's value from version ``a`` to version ``b``."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{label}@{a}",
        tofile=f"{label}@{b}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
