"""Sessions with a time to live (see :mod:`axio_context.expiry`), as plans written once.

A session row has ``ttl_ms`` and ``expires_at`` as memory items do (:mod:`axio_context.sql.expiry`).
Every catalog read (listing, tree, browser, a row looked up by id or prefix, search results)
keeps only live sessions with :func:`live_session`, so an expired session is never shown, even
before a sweep. A session store that meets its own expired session deletes it first
(:func:`purge_if_expired`) through the backend's own delete (forks keep their rows), so a read
finds what a missing session gives and a write starts the session afresh, as a Redis key's
lazy expiry does for openai-agents' ``RedisSession``. A store with a TTL sets it again on every
write (:func:`touch`), and on a read when asked (:func:`refresh_session`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from ..expiry import NO_TTL, TTLConfig, check_ttl, now_ms
from ..sql import Dialect, ExecuteMany, Native, Plan, Rows, Runner, Value
from ..sql.expiry import SWEEP_BATCH, count_due, in_batches, live, refresh, set_ttl

__all__ = [
    "SESSIONS",
    "SessionExpiry",
    "SessionTTL",
    "due_sessions",
    "expired",
    "live_session",
    "purge_if_expired",
    "refresh_session",
    "session_ttl",
    "sweep_sessions",
    "touch",
]

#: The table whose rows are sessions.
SESSIONS: Final = "sessions"

#: A backend's delete of one session by id (its forks keep their rows), called with the
#: transaction's connection first: SQLite's on the worker thread, PostgreSQL's awaited.
Delete = Callable[..., Any]


def live_session(alias: str = "", param: str = "?") -> str:
    """The condition keeping the sessions not yet expired (bind now, in milliseconds, to
    ``param``; a backend's own numbered statement names its ``$n``): the one fragment every
    session read adds."""
    return live(alias, param)


def due_sessions(column: str = "sid") -> str:
    """A SELECT of ``column`` of the expired sessions (bind now), by the expiry index: the one
    statement of what is due (a lookup, a sweep, and a backend's own scan that leaves them out
    without changing its statement all start from it)."""
    return f"SELECT {column} FROM {SESSIONS} WHERE expires_at <= ?"


def session_ttl(ttl: float | TTLConfig | None) -> TTLConfig:
    """A session store's ``ttl=``: seconds (each write restarts them), a :class:`TTLConfig`
    (``default_ttl``, ``refresh_on_read``), or None for sessions that never expire."""
    if ttl is None:
        return NO_TTL
    if isinstance(ttl, TTLConfig):
        return ttl
    return TTLConfig(default_ttl=check_ttl(ttl))


def expired(d: Dialect, session_id: str, now: int) -> Plan[bool]:
    """Whether the session ``session_id`` exists and has expired (one indexed lookup)."""
    due = yield Value(f"{due_sessions('1')} AND id = ?", (now, session_id))
    return due is not None


def purge_if_expired(d: Dialect, session_id: str, delete: Delete, now: int) -> Plan[bool]:
    """Delete the session ``session_id`` if it has expired (by ``delete``); whether it had. Run
    it in a write transaction (after :func:`expired` said yes, to keep the usual read cheap)."""
    if not (yield from expired(d, session_id, now)):
        return False
    yield Native(delete, (session_id,))
    return True


def touch(d: Dialect, session_id: str, ttl_ms: int | None, now: int) -> Plan[None]:
    """Give the session a TTL of ``ttl_ms`` from ``now`` (what a write through a store with a
    TTL does)."""
    yield from set_ttl(d, SESSIONS, "id", session_id, ttl_ms, now)


def refresh_session(d: Dialect, session_id: str, now: int) -> Plan[None]:
    """Restart the session's TTL from ``now`` if it has one and is live (a refreshing read)."""
    yield from refresh(d, SESSIONS, "id", [session_id], now)


def sweep_sessions(d: Dialect, delete: Delete, now: int, batch: int) -> Plan[int]:
    """Delete at most ``batch`` expired sessions (each by ``delete``); how many went."""
    rows = yield Rows(f"{due_sessions('id')} LIMIT ?", (now, batch))
    for (session_id,) in rows:
        yield Native(delete, (session_id,))
    return len(rows)


class SessionExpiry:
    """A database's expired sessions, counted and swept (what ``prune --expired``, ``stats`` and
    a :class:`~axio_context.expiry.Sweeper` call with the memory stores)."""

    def __init__(self, runner: Runner, delete: Delete) -> None:
        self._runner = runner
        self._delete = delete

    async def count_expired(self) -> int:
        """How many sessions have expired and wait for a sweep."""
        return await self._runner.read(count_due, SESSIONS, now_ms())

    async def sweep_expired(self, *, batch: int = SWEEP_BATCH) -> int:
        """Delete every expired session, ``batch`` to a transaction; how many went."""
        return await in_batches(self._runner, sweep_sessions, self._delete, now_ms(), batch=batch)

    async def ttls(self, session_ids: Sequence[str]) -> list[SessionTTL]:
        """The TTL and expiry time of those of ``session_ids`` that are live and have one (what
        ``copy`` carries across)."""
        return await self._runner.read(_ttls, list(session_ids), now_ms())

    async def restore(self, ttls: Sequence[SessionTTL]) -> None:
        """Give sessions the TTLs and expiry times ``ttls`` name, as they were (one transaction)."""
        if ttls:
            await self._runner.write(_restore, list(ttls))


#: A session's id, TTL and expiry time (milliseconds), as :meth:`SessionExpiry.ttls` reads them.
SessionTTL = tuple[str, int, int]


def _ttls(d: Dialect, session_ids: list[str], now: int) -> Plan[list[SessionTTL]]:
    rows = yield Rows(
        f"SELECT id, ttl_ms, expires_at FROM {SESSIONS} WHERE expires_at > ? AND {d.any_of('id')}",
        (now, d.list_arg(session_ids)),
    )
    return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]


def _restore(d: Dialect, ttls: list[SessionTTL]) -> Plan[None]:
    yield ExecuteMany(
        f"UPDATE {SESSIONS} SET ttl_ms = ?, expires_at = ? WHERE id = ?", [(t, e, i) for i, t, e in ttls]
    )
