"""The message key and stored times: the one home of the ``(sid << 32) | position`` arithmetic.

A message's row id is its session's internal ``sid`` shifted left by :data:`SHIFT` bits, or-ed
with its 0-based position, so one session's messages are one contiguous range of the messages
table's b-tree (search joins ``rowid >> 32`` to ``sessions.sid``).
"""

from __future__ import annotations

import time
from typing import Final

from axio_context.transcript import format_time

__all__ = ["POSITION_MASK", "SHIFT", "iso", "key", "now_ms", "position_of", "sid_of", "sql_sid"]

#: Bits of a message key that hold the position.
SHIFT: Final = 32

#: The position bits of a message key.
POSITION_MASK: Final = (1 << SHIFT) - 1


def key(sid: int, position: int) -> int:
    """The messages-table key of a session's position."""
    return (sid << SHIFT) | position


def sid_of(message_key: int) -> int:
    """The ``sid`` of the session whose rows hold ``message_key``."""
    return message_key >> SHIFT


def position_of(message_key: int) -> int:
    """The position part of ``message_key``."""
    return message_key & POSITION_MASK


def sql_sid(column: str) -> str:
    """SQL for the ``sid`` of the message key in ``column`` (to join ``sessions.sid``)."""
    return f"({column} >> {SHIFT})"


def now_ms() -> int:
    """Milliseconds since the epoch, UTC."""
    return time.time_ns() // 1_000_000


def iso(ms: int | None) -> str:
    """ISO-8601 UTC text for a stored millisecond time ('' for none), by integer arithmetic."""
    return "" if ms is None else format_time(ms)
