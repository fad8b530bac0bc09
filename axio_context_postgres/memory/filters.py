"""Metadata filters (:mod:`axio_context.memory.metadata`'s grammar) as SQL over a ``jsonb``
column, meaning exactly what :func:`~axio_context.memory.metadata.matches` means.

Equality compares ``jsonb`` values, so JSON's types hold (``1`` is neither ``true`` nor
``"1"``; ``1`` equals ``1.0``); a range reads the value as a number only when its JSON type is
a number (inside ``CASE``: PostgreSQL does not promise the order of ``AND``'s terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.memory.metadata import Condition

from .common import encode_json

__all__ = ["filter_sql"]

_RANGE_SQL: Final = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def filter_sql(conditions: Sequence[Condition], args: list[Any], column: str = "metadata") -> str:
    """The conditions as one SQL boolean over ``column``; their values are appended to ``args``
    (numbered after the ones already there)."""

    def param(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    parts: list[str] = []
    for cond in conditions:
        if cond.op == "$in" and not cond.value:
            parts.append("false")
            continue
        key = param(cond.field)
        if cond.op == "$eq":
            parts.append(f"({column} -> {key}) = {param(encode_json(cond.value))}::jsonb")
        elif cond.op == "$in":
            parts.append(f"({column} -> {key}) = ANY({param([encode_json(v) for v in cond.value])}::jsonb[])")
        else:
            op = _RANGE_SQL[cond.op]
            parts.append(
                f"(CASE WHEN jsonb_typeof({column} -> {key}) = 'number'"
                f" THEN ({column} ->> {key})::numeric {op} {param(repr(cond.value))}::numeric ELSE false END)"
            )
    return " AND ".join(parts) or "true"
