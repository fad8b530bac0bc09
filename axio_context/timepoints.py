"""Reading a point in time as people write it: a date (``2025-06-01``), a time
(``2025-06-01T14:30``, local unless it has an offset) or an age (``30m``, ``12h``, ``7d``, ``2w``).

One parser for every front end that takes ``--since`` (the command line, the MCP server's tools).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final

__all__ = ["parse_when"]

_RELATIVE: Final = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS: Final = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(text: str) -> datetime:
    """``text`` as an aware datetime (an age counts back from now); a ``ValueError`` naming
    ``text`` and the forms it may take when it is none of them, or out of range."""
    text = text.strip()
    m = _RELATIVE.match(text)
    if not m:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"{text!r} is not a date (2025-06-01), a time (2025-06-01T14:30) or an age (7d)"
            ) from None
    try:
        if m:
            return datetime.now().astimezone() - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
        return when if when.tzinfo else when.astimezone()
    except (OverflowError, OSError, ValueError) as exc:  # before year 1, or past what the OS knows
        raise ValueError(f"{text!r} is out of range ({exc})") from None
