"""The expiry rule in SQL, written once for every table that has a TTL (see
:mod:`axio_context.expiry`): each such table has ``ttl_ms`` (the item's TTL, NULL for never) and
``expires_at`` (milliseconds since the epoch, NULL for never) with a partial index on
``expires_at``, so the sweep and the count of what is due read only expired rows. A row is live
while ``expires_at`` is NULL or after now; every read keeps only live rows (:func:`live`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .plan import Dialect, Execute, Plan, PlanFn, Runner, Value

__all__ = [
    "SWEEP_BATCH",
    "alive",
    "count_due",
    "due",
    "due_keys",
    "in_batches",
    "live",
    "refresh",
    "set_ttl",
]

#: The most rows one sweep transaction deletes: a sweep of many holds the write lock (SQLite's
#: whole file) for a batch at a time, so writers between batches do not wait for all of it.
SWEEP_BATCH: Final = 1000


def live(alias: str = "", param: str = "?") -> str:
    """A condition keeping the rows not yet expired (bind now, in milliseconds, to ``param``:
    ``?`` in a plan, a numbered one such as ``$2`` in a backend's own statement)."""
    col = f"{alias}.expires_at" if alias else "expires_at"
    return f"({col} IS NULL OR {col} > {param})"


def due_keys(table: str, key: str) -> str:
    """A SELECT of ``key`` of at most a batch of ``table``'s expired rows (bind now, the batch
    size), by the expiry index: what a sweep deletes."""
    return f"SELECT {key} FROM {table} WHERE expires_at <= ? LIMIT ?"


def due(table: str, key: str) -> str:
    """A condition picking at most a batch of ``table``'s expired rows by ``key`` (bind now, the
    batch size): what a sweep's DELETE takes."""
    return f"{key} IN ({due_keys(table, key)})"


async def in_batches(runner: Runner, plan: PlanFn[..., int], *args: Any, batch: int = SWEEP_BATCH) -> int:
    """Run ``plan(d, *args, batch)`` (a sweep deleting at most ``batch`` rows, returning how many)
    in one write transaction after another until one deletes fewer; how many went in all."""
    total = 0
    while True:
        gone = await runner.write(plan, *args, batch)
        total += gone
        if gone < batch:
            return total


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
