"""Stored usage, the same on every SQL backend: the columns of ``usage_records`` and
``usage_rollups``, the rollups a row adds to, the maps stored beside the counts, and the rule
that keeps every rollup readable.

Each recorded row adds to ``usage_rollups``: running totals per (dimension, key, UTC day) and per
(dimension, key) for all time (day :data:`ALL_TIME`), for the session, agent, run, model, project
and the day itself. A count rollup is a 64-bit integer, so a record that would take any all-time
rollup past ``2**63 - 1`` is refused before anything is written (:func:`check_rollups`): each
session may be within bounds while their project's sum is not, and a total past the bound would
make every later read of it fail. The per-day rollups are never larger than the all-time ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any, Final

import msgspec

from ..usage import MAX_TOKENS
from .counts import COUNT_FIELDS, RunUsage
from .errors import UsageError

__all__ = [
    "ALL_TIME",
    "COLUMNS",
    "HELD_ROLLUPS",
    "Extras",
    "check_rollups",
    "decode_extras",
    "encode_extras",
    "encode_maps",
    "held_rollup_args",
    "merge_extras",
    "rollup_keys",
    "usage_of",
]

#: The integer columns of usage_records and usage_rollups, in order (audio_seconds follows).
COLUMNS: Final = ("requests", "tool_calls", *COUNT_FIELDS)

#: The ``day`` of the rollup rows that total all time (days are 0 and up).
ALL_TIME: Final = -1


class Extras(msgspec.Struct, omit_defaults=True):
    """The maps of a usage, stored together: ``details`` and the provider ``extra`` counters."""

    d: dict[str, int] = {}
    x: dict[str, int | float] = {}


_ENCODE: Final = msgspec.msgpack.Encoder()
_DECODE: Final = msgspec.msgpack.Decoder(Extras)


def encode_extras(usage: RunUsage) -> bytes | None:
    """The usage's details and extra counters as MessagePack, or None when both are empty."""
    if not usage.details and not usage.extra:
        return None
    return _ENCODE.encode(Extras(usage.details, usage.extra))


def encode_maps(extras: Extras) -> bytes:
    """Merged maps as stored (MessagePack, as :func:`encode_extras` writes them)."""
    return _ENCODE.encode(extras)


def decode_extras(blob: bytes | None) -> Extras:
    return Extras() if blob is None else _DECODE.decode(blob)


def usage_of(counts: Sequence[Any], audio: float, cost: Decimal | None, extras: Extras) -> RunUsage:
    """A RunUsage from stored figures."""
    fields: dict[str, Any] = {name: int(value or 0) for name, value in zip(COLUMNS, counts, strict=True)}
    return RunUsage(
        **fields, audio_seconds=audio or 0, cost=cost, details=dict(extras.d), extra=dict(extras.x)
    )


def merge_extras(a: Extras, b: Extras) -> Extras:
    """``a`` with ``b`` added: counters summed, new keys after ``a``'s in ``b``'s order."""
    d = dict(a.d)
    for k, v in b.d.items():
        d[k] = d.get(k, 0) + v
    x = dict(a.x)
    for k, n in b.x.items():
        x[k] = x.get(k, 0) + n
    return Extras(d, x)


def rollup_keys(session_id: str, agent: str, run: str, model: str, project: str | None) -> dict[str, str]:
    """The key a usage row adds to in each rollup dimension (the ``day`` dimension's key is '';
    its day is the row's, and :data:`ALL_TIME`)."""
    return {
        "session": session_id,
        "agent": agent,
        "run": run,
        "model": model,
        "project": project or "",
        "day": "",
    }


#: The all-time rollups a row adds to, as held now: ``dim, key`` and the counts (one index
#: lookup each; bind :func:`held_rollup_args`).
HELD_ROLLUPS: Final = (
    f"SELECT dim, key, {', '.join(COLUMNS)} FROM usage_rollups WHERE day = ? AND ("
    + " OR ".join(["(dim = ? AND key = ?)"] * 6)
    + ")"
)


def held_rollup_args(keys: dict[str, str]) -> list[Any]:
    """The parameters of :data:`HELD_ROLLUPS` for :func:`rollup_keys`' ``keys``."""
    return [ALL_TIME, *(v for pair in keys.items() for v in pair)]


def check_rollups(held: Iterable[Sequence[Any]], usage: RunUsage) -> None:
    """:class:`UsageError` when adding ``usage`` would take a rollup of ``held`` (rows of
    :data:`HELD_ROLLUPS`: dim, key, counts...) past ``2**63 - 1``; the caller writes nothing."""
    adds = [getattr(usage, name) for name in COLUMNS]
    if not any(adds):
        return
    for row in held:
        for name, have, add in zip(COLUMNS, row[2:], adds, strict=True):
            if add and int(have or 0) + add > MAX_TOKENS:
                total = "the all-usage" if row[0] == "day" else f"the {row[0]} {row[1]!r}"
                raise UsageError(
                    f"{name}: adding {add} would take {total} total past {MAX_TOKENS}; nothing recorded"
                )
