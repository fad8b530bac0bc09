"""Sessions with a time to live on SQLite: the core's plans (:mod:`axio_context.catalog.expiry_sql`)
run around a session store's call on the connection's worker thread (or inline), in its
transaction. What the rules are is said there; this module only wires them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from axio_context.catalog.expiry_sql import expired, purge_if_expired, refresh_session, touch
from axio_context.expiry import now_ms

from .runner import SQLITE, drive
from .sessions import delete_session
from .transactions import write_tx

__all__ = ["live_call", "set_ttl"]

T = TypeVar("T")


def live_call(
    c: Any,
    fn: Callable[..., T],
    ttl_ms: int | None,
    refresh: bool,
    session_id: str,
    *args: Any,
    **kwargs: Any,
) -> T:
    """``fn(c, session_id, *args, **kwargs)`` on the session as if an expired one were absent: it
    is deleted first (its forks keep their rows), so a read finds nothing and a write starts the
    session afresh. With ``ttl_ms`` (a write through a store with a TTL) the session's TTL starts
    again from now; with ``refresh`` (a refreshing read) its own TTL does; either in the same
    transaction as ``fn``."""
    now = now_ms()
    if ttl_ms is None and not refresh:
        if drive(c, expired(SQLITE, session_id, now)):
            with write_tx(c):
                drive(c, purge_if_expired(SQLITE, session_id, delete_session, now))
        return fn(c, session_id, *args, **kwargs)
    with write_tx(c):
        drive(c, purge_if_expired(SQLITE, session_id, delete_session, now))
        result = fn(c, session_id, *args, **kwargs)
        if ttl_ms is not None:
            drive(c, touch(SQLITE, session_id, ttl_ms, now))
        else:
            drive(c, refresh_session(SQLITE, session_id, now))
        return result


def set_ttl(c: Any, session_id: str, ttl_ms: int | None) -> None:
    """Give the session a TTL of ``ttl_ms`` from now (None: it never expires)."""
    drive(c, touch(SQLITE, session_id, ttl_ms, now_ms()))
