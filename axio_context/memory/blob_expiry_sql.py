"""The blob store's expiry, written once over a backend's blob statements (see
:mod:`axio_context.expiry` and :mod:`axio_context.sql.expiry`): a key's TTL is set in the
transaction that writes it, and a read of an expired key finds nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from axio_context.expiry import now_ms
from axio_context.sql import Dialect, Plan
from axio_context.sql.expiry import alive, set_ttl

__all__ = ["KEYS", "delete_alive", "if_alive", "put_with_ttl"]

T = TypeVar("T")

#: The table of blob keys, where each key's TTL is kept.
KEYS: Final = "memory_blob_keys"


def put_with_ttl(
    d: Dialect, put: Callable[[Dialect, Any], Plan[None]], blob: Any, ttl_ms: int | None
) -> Plan[None]:
    """``put(d, blob)``, then ``blob.key`` given ``ttl_ms`` (None: never expires) from now."""
    yield from put(d, blob)
    yield from set_ttl(d, KEYS, "key", blob.key, ttl_ms, now_ms())


def if_alive(d: Dialect, fn: Callable[..., Plan[T]], key: str, *args: object) -> Plan[T | None]:
    """``fn(d, key, *args)`` when ``key`` has not expired, else None (in one transaction)."""
    if not (yield from alive(d, KEYS, "key", key, now_ms())):
        return None
    return (yield from fn(d, key, *args))


def delete_alive(d: Dialect, delete: Callable[[Dialect, str], Plan[bool]], key: str) -> Plan[bool]:
    """``delete(d, key)``; True only if the key existed and had not expired."""
    was_alive = yield from alive(d, KEYS, "key", key, now_ms())
    return bool((yield from delete(d, key))) and was_alive
