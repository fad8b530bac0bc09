"""Token totals: the rules every store applies to ``set_context_tokens``/``add_context_tokens``.

A total is a whole number in ``0 .. MAX_TOKENS`` (what a database's 64-bit INTEGER column
holds). ``set`` takes totals; ``add`` takes deltas (negative ones are corrections) whose
resulting totals must obey the same rule, else nothing changes. Whole floats (usage figures
parsed from JSON as ``10.0``) and any integer type (numpy's) are accepted as ints.
"""

from __future__ import annotations

import operator
from typing import Final, SupportsIndex, cast

from .errors import TokenCountError

__all__ = ["MAX_TOKENS", "token_count", "token_totals_after_add"]

#: The largest token total a store keeps (SQLite's INTEGER is 64-bit).
MAX_TOKENS: Final = (1 << 63) - 1


def token_count(name: str, value: object, *, low: int = 0) -> int:
    """``value`` as an int in ``low .. MAX_TOKENS``, naming ``name`` when refused: TypeError for
    what is not a whole number, :class:`TokenCountError` for one out of range."""
    if type(value) is int:  # the usual call
        count: int | None = value
    elif isinstance(value, float):
        count = int(value) if value.is_integer() else None
    elif isinstance(value, bool):
        count = None
    else:
        try:
            count = operator.index(cast(SupportsIndex, value))
        except TypeError:
            count = None
    if count is None:  # a wrong type, as every store has always said
        raise TypeError(f"{name} must be a whole number, not {value!r} ({type(value).__name__})")
    if not low <= count <= MAX_TOKENS:
        raise TokenCountError(f"{name} must be between {low} and {MAX_TOKENS}, not {count}")
    return count


def token_totals_after_add(
    current: tuple[int, int], input_tokens: object, output_tokens: object
) -> tuple[int, int]:
    """The totals after adding these deltas to ``current``, refused (TokenCountError) when a
    delta is not a whole number or a total would leave ``0 .. MAX_TOKENS``."""
    totals = []
    for name, now, delta in (
        ("input_tokens", current[0], input_tokens),
        ("output_tokens", current[1], output_tokens),
    ):
        add = token_count(name, delta, low=-MAX_TOKENS)
        total = now + add
        if not 0 <= total <= MAX_TOKENS:
            raise TokenCountError(
                f"{name}: adding {add} to {now} gives {total}, outside 0..{MAX_TOKENS}; totals unchanged"
            )
        totals.append(total)
    return totals[0], totals[1]
