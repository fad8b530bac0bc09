"""Times in exports: ISO-8601 UTC text with milliseconds, exactly (integer arithmetic); and a
``datetime`` filter in milliseconds since the epoch, as every backend stores times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from ..errors import DecodeError

__all__ = ["epoch_ms", "format_time", "parse_time"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
#: The times :func:`format_time` can write: UTC years 1 to 9999, in milliseconds.
_FIRST_MS: Final = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // _MS
_LAST_MS: Final = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // _MS


def format_time(ms: int) -> str:
    """Milliseconds since the epoch as ISO-8601 UTC text, exactly (integer arithmetic)."""
    return (_EPOCH + ms * _MS).isoformat(timespec="milliseconds")


def parse_time(text: str) -> int:
    """Inverse of :func:`format_time`: any ISO-8601 time with a UTC offset, to milliseconds.

    A time whose UTC value falls outside years 1..9999 (``9999-12-31T23:59:59-01:00``) is
    refused: :func:`format_time` could not write it back.
    """
    try:
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise DecodeError(f"{text!r} is not an ISO-8601 time") from None
    if value.tzinfo is None:
        raise DecodeError(f"time {text!r} has no UTC offset (write e.g. {text}+00:00)")
    ms = (value - _EPOCH) // _MS
    if not _FIRST_MS <= ms <= _LAST_MS:
        raise DecodeError(f"time {text!r} is outside years 1..9999 once converted to UTC")
    return ms


def epoch_ms(when: datetime | None) -> int | None:
    """``when`` in milliseconds since the epoch (a naive time is local); None stays None."""
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.astimezone()  # a naive time is the local time
    return int(when.timestamp() * 1000)
