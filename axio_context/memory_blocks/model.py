"""What a memory block is: :class:`MemoryBlock` (what a caller creates), :class:`StoredBlock` (a block as
stored, at its current version) and :class:`BlockVersion` (one entry of its history), and the
checks every store applies before it writes."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Final

import msgspec

from .errors import BlockInputError, BlockLimitError

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LABEL",
    "SHARED",
    "BlockVersion",
    "MemoryBlock",
    "StoredBlock",
    "check_agent",
    "check_label",
    "check_limit",
    "check_value",
]

#: A block's character limit when none is given (Letta's default for core memory blocks).
DEFAULT_LIMIT: Final = 5000
#: The longest label, in characters.
MAX_LABEL: Final = 100
#: The owner of a shared block: no agent (agents see it once :meth:`attach` links them).
SHARED: Final = ""


@dataclass(frozen=True, slots=True)
class MemoryBlock:
    """A labelled block of text an agent keeps in its context window: ``value`` at most ``limit``
    characters, ``description`` telling the model what it is for, ``read_only`` refusing edits."""

    label: str
    value: str = ""
    limit: int = field(default=DEFAULT_LIMIT, kw_only=True)
    description: str = field(default="", kw_only=True)
    read_only: bool = field(default=False, kw_only=True)


class StoredBlock(msgspec.Struct, frozen=True, omit_defaults=True):
    """A block as stored: its fields at its current ``version``, its owner (``agent_id``; ``""``:
    shared), the agents a shared block is attached to, and when and by whom it last changed."""

    label: str
    value: str
    limit: int
    description: str
    read_only: bool
    version: int
    agent_id: str
    updated_at: str
    updated_by: str = ""
    run_id: str = ""
    attached: tuple[str, ...] = ()

    @property
    def chars(self) -> int:
        """The value's length in characters."""
        return len(self.value)


class BlockVersion(msgspec.Struct, frozen=True, omit_defaults=True):
    """One change of a block: its number, what it did (``create``, ``set``, ``append``, ``insert``,
    ``replace``, ``update``, ``rename``, ``undo``, ``redo``), the block's fields after it, and
    when, by which agent and in which run it was made."""

    version: int
    action: str
    label: str
    value: str
    limit: int
    description: str
    read_only: bool
    created_at: str
    agent_id: str = ""
    run_id: str = ""


def check_label(label: object) -> str:
    """``label`` if it is a usable label: text of 1 to :data:`MAX_LABEL` characters, no control
    characters, no surrounding blanks."""
    if not isinstance(label, str):
        raise BlockInputError(f"a block label must be text, got {type(label).__name__}")
    if not label.strip():
        raise BlockInputError("a block label must not be empty")
    if len(label) > MAX_LABEL:
        raise BlockInputError(f"a block label is at most {MAX_LABEL} characters, got {len(label)}")
    if label != label.strip():
        raise BlockInputError(f"a block label must not start or end with blanks: {label!r}")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in label):
        raise BlockInputError(f"a block label must not hold control characters: {label!r}")
    return label


def check_agent(agent_id: object, what: str = "agent_id") -> str:
    """``agent_id`` if it is text without NUL characters."""
    return check_text(agent_id, what)


def check_limit(limit: object) -> int:
    """``limit`` if it is a whole number of characters from 1 to 2**31 - 1."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 2**31 - 1:
        raise BlockInputError(f"a block limit must be a whole number from 1 to 2147483647, got {limit!r}")
    return limit


def check_text(text: object, what: str) -> str:
    """``text`` if it is text without NUL characters (PostgreSQL's text cannot hold NUL)."""
    if not isinstance(text, str):
        raise BlockInputError(f"{what} must be text, got {type(text).__name__}")
    if "\x00" in text:
        raise BlockInputError(f"{what} must not hold NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BlockInputError(f"{what} must be valid Unicode (it holds a lone surrogate)") from None
    return text


def check_value(label: str, value: object, limit: int) -> str:
    """``value`` if it is text that fits ``limit`` characters."""
    text = check_text(value, "a block value")
    if len(text) > limit:
        raise BlockLimitError(
            f"block {label!r}: the new value is {len(text)} characters, over its limit of {limit};"
            " nothing was written"
        )
    return text
