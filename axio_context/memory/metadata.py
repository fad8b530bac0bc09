"""Metadata of documents, entities and relationships: JSON copies, and the filter grammar.

A filter maps top-level metadata keys to conditions, all of which must hold::

    {"lang": "en"}                          equality (str, number, bool or None)
    {"lang": {"$in": ["en", "de"]}}         any of the values
    {"year": {"$gte": 2020, "$lt": 2024}}   numeric range: $gt, $gte, $lt, $lte
    {"lang": {"$eq": "en"}}                 equality, spelled out

Equality is JSON's: ``1`` matches neither ``True`` nor ``"1"``; a range never matches a
non-number; a missing key matches nothing. :func:`compile_filter` checks a filter once (an
unknown operator is a :class:`~.errors.FilterError`) and :func:`matches` applies it in Python;
the SQLite store turns the same conditions into SQL meaning the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

import msgspec

from .errors import FilterError, InvalidInputError

__all__ = ["Condition", "MetadataFilter", "check_metadata", "compile_filter", "matches"]

#: ``{field: value}`` or ``{field: {"$op": value}}``; see the module docstring.
MetadataFilter: TypeAlias = Mapping[str, Any]

_RANGE_OPS: Final = frozenset({"$gt", "$gte", "$lt", "$lte"})
_OPS: Final = frozenset({"$eq", "$in"}) | _RANGE_OPS


class Condition(msgspec.Struct, frozen=True):
    """One checked clause of a filter: ``field`` compared by ``op`` ($eq, $in, $gt ...)."""

    field: str
    op: str
    value: Any


def _scalar(value: Any, where: str) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise FilterError(f"filter {where}: {value!r} is not a finite number")
        return value
    raise FilterError(f"filter {where}: {value!r} is not a string, number, boolean or null")


def compile_filter(filter: MetadataFilter | None) -> list[Condition]:
    """The conditions of ``filter``, checked; :class:`FilterError` names what is wrong."""
    if filter is None:
        return []
    if not isinstance(filter, Mapping):
        raise FilterError(
            f"a filter is a mapping of metadata keys to conditions, got {type(filter).__name__}"
        )
    out: list[Condition] = []
    for field, spec in filter.items():
        if not isinstance(field, str) or not field:
            raise FilterError(f"filter key {field!r} is not a non-empty string")
        if field.startswith("$"):
            raise FilterError(f"unknown filter operator {field!r} (operators go inside a key's condition)")
        if '"' in field or "\\" in field:
            raise FilterError(f"filter key {field!r} holds a quote or backslash")
        if not isinstance(spec, Mapping):
            out.append(Condition(field, "$eq", _scalar(spec, f"on {field!r}")))
            continue
        if not spec:
            raise FilterError(f"filter on {field!r} has no operator")
        for op, value in spec.items():
            where = f"{op} on {field!r}"
            if op not in _OPS:
                raise FilterError(
                    f"unknown filter operator {op!r} on {field!r}; known: {', '.join(sorted(_OPS))}"
                )
            if op == "$eq":
                out.append(Condition(field, op, _scalar(value, where)))
            elif op == "$in":
                if isinstance(value, str | bytes) or not isinstance(value, Sequence):
                    raise FilterError(f"filter {where}: takes a list of values, got {value!r}")
                out.append(Condition(field, op, tuple(_scalar(v, where) for v in value)))
            else:
                if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                    raise FilterError(f"filter {where}: takes a finite number, got {value!r}")
                out.append(Condition(field, op, value))
    return out


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _equal(x: Any, v: Any) -> bool:
    if v is None:
        return x is None
    if isinstance(v, bool):
        return isinstance(x, bool) and x is v
    if isinstance(v, str):
        return isinstance(x, str) and x == v
    return _is_number(x) and bool(x == v)


def _holds(x: Any, cond: Condition) -> bool:
    if cond.op == "$eq":
        return _equal(x, cond.value)
    if cond.op == "$in":
        return any(_equal(x, v) for v in cond.value)
    if not _is_number(x):
        return False
    if cond.op == "$gt":
        return bool(x > cond.value)
    if cond.op == "$gte":
        return bool(x >= cond.value)
    if cond.op == "$lt":
        return bool(x < cond.value)
    return bool(x <= cond.value)


_MISSING: Final = object()


def matches(metadata: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    """Whether ``metadata`` meets every condition (a missing key meets none)."""
    for cond in conditions:
        x = metadata.get(cond.field, _MISSING)
        if x is _MISSING or not _holds(x, cond):
            return False
    return True


_JSON_ENCODER: Final = msgspec.json.Encoder()


def check_metadata(metadata: Any, where: str = "") -> dict[str, Any]:
    """A JSON copy of ``metadata`` (a dict with string keys), as the stores keep it."""
    label = f"{where}: " if where else ""
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"{label}metadata is a dict, got {type(metadata).__name__}")
    if not metadata:
        return {}  # the usual case of a batch of documents: nothing to encode
    try:
        text = _JSON_ENCODER.encode(metadata)
        copy = msgspec.json.decode(text)
    except (TypeError, msgspec.EncodeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"{label}metadata is not JSON: {exc}") from None
    # JSON has no NaN or infinity: msgspec writes them as null, which would change the value
    # silently. Only a copy holding a null can have lost one, so only then is it looked for.
    if b"null" in text and _non_finite(metadata):
        raise InvalidInputError(f"{label}metadata holds a number that is not finite (NaN or infinity)")
    assert isinstance(copy, dict)
    return copy


def _non_finite(value: Any) -> bool:
    """Whether a float NaN or infinity is anywhere inside ``value`` (no recursion: any depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False
