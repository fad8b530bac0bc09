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
from axio_context.sql import encode_json

__all__ = ["filter_sql"]

_RANGE_SQL: Final = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def filter_sql(conditions: Sequence[Condition], column: str = "metadata") -> tuple[str, list[Any]]:
    """The conditions as one SQL boolean over ``column`` (``?`` placeholders) and its values."""
    parts: list[str] = []
    args: list[Any] = []
    for cond in conditions:
        if cond.op == "$in" and not cond.value:
            parts.append("false")
            continue
        if cond.op == "$eq":
            parts.append(f"({column} -> ?) = ?::jsonb")
            args += [cond.field, encode_json(cond.value)]
        elif cond.op == "$in":
            parts.append(f"({column} -> ?) = ANY(?::jsonb[])")
            args += [cond.field, [encode_json(v) for v in cond.value]]
        else:
            parts.append(
                f"(CASE WHEN jsonb_typeof({column} -> ?) = 'number'"
                f" THEN ({column} ->> ?)::numeric {_RANGE_SQL[cond.op]} ?::numeric ELSE false END)"
            )
            args += [cond.field, cond.field, repr(cond.value)]
    return " AND ".join(parts) or "true", args
