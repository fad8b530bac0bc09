"""The expiry rule in SQL, written once for every table that has a TTL (see
:mod:`axio_context.expiry`): each such table has ``ttl_ms`` (the item's TTL, NULL for never) and
``expires_at`` (milliseconds since the epoch, NULL for never) with a partial index on
``expires_at``, so the sweep and the count of what is due read only expired rows. A row is live
while ``expires_at`` is NULL or after now; every read keeps only live rows (:func:`live`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .plan import Dialect, Execute, Plan, Value

__all__ = ["alive", "count_due", "live", "refresh", "set_ttl"]


def live(alias: str = "") -> str:
    """A condition keeping the rows not yet expired (bind now, in milliseconds)."""
    col = f"{alias}.expires_at" if alias else "expires_at"
    return f"({col} IS NULL OR {col} > ?)"


def set_ttl(d: Dialect, table: str, key: str, value: Any, ttl_ms: int | None, now: int) -> Plan[None]:
    """Give the row whose ``key`` column is ``value`` a TTL of ``ttl_ms`` starting at ``now``."""
    yield Execute(
        f"UPDATE {table} SET ttl_ms = ?, expires_at = ? WHERE {key} = ?",
        (ttl_ms, None if ttl_ms is None else now + ttl_ms, value),
    )


def refresh(d: Dialect, table: str, key: str, values: Sequence[Any], now: int) -> Plan[None]:
    """Restart the TTL of the live rows among ``values`` (of column ``key``) that have one."""
    if values:
        yield Execute(
            f"UPDATE {table} SET expires_at = ? + ttl_ms"
            f" WHERE ttl_ms IS NOT NULL AND {live()} AND {d.any_of(key)}",
            (now, now, d.list_arg(values)),
        )


def alive(d: Dialect, table: str, key: str, value: Any, now: int) -> Plan[bool]:
    """Whether the row whose ``key`` column is ``value`` exists and has not expired."""
    found = yield Value(f"SELECT 1 FROM {table} WHERE {key} = ? AND {live()}", (value, now))
    return found is not None


def count_due(d: Dialect, table: str, now: int) -> Plan[int]:
    """How many rows of ``table`` have expired (by its ``expires_at`` index)."""
    return int((yield Value(f"SELECT count(*) FROM {table} WHERE expires_at <= ?", (now,))) or 0)
