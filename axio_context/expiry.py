"""Expiry: a time to live (TTL) on what a store keeps, as LangGraph's store has one.

A store takes a :class:`TTLConfig` (``default_ttl`` for items written without one, and
``refresh_on_read``); each write may name its own ``ttl`` (seconds; ``None`` keeps the item until
it is deleted; :data:`DEFAULT` takes the store's). An item stores its TTL and the instant it
expires; every read leaves out an item past that instant, so an expired item is never returned,
even before anything deletes it. A read with refresh restarts the item's TTL from now. What
deletes expired items is a *sweep*: ``axio-context prune --expired``, a store's
``sweep_expired()``, or a :class:`Sweeper` running one every so often inside a long-running
process. Unlike LangGraph (minutes), TTLs here are seconds, as openai-agents' sessions take them.

Times are the writing process's clock, in milliseconds since the epoch, on every backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from .errors import AxioContextError

__all__ = [
    "DEFAULT",
    "MAX_TTL",
    "NO_TTL",
    "TTL",
    "Default",
    "InvalidTTLError",
    "Sweeper",
    "TTLConfig",
    "check_ttl",
    "expires_at",
    "now_ms",
    "resolve_ttl",
    "start_sweeper",
]

#: The longest TTL taken: 100 years, in seconds (longer is surely a unit mistake).
MAX_TTL: Final = 100 * 365.25 * 24 * 3600


class InvalidTTLError(AxioContextError, ValueError):
    """A TTL that is not a number of seconds above 0 and at most 100 years."""


class Default(enum.Enum):
    """The type of :data:`DEFAULT`."""

    DEFAULT = "default"


#: A write's ``ttl`` that takes the store's ``default_ttl``.
DEFAULT: Final = Default.DEFAULT
#: What a write's ``ttl`` may be: seconds, None (never expires) or :data:`DEFAULT`.
TTL: TypeAlias = float | Default | None


def check_ttl(ttl: object, name: str = "ttl") -> float | None:
    """``ttl`` if it is None or a usable number of seconds; InvalidTTLError naming ``name`` else."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InvalidTTLError(f"{name} is a number of seconds or None, got {ttl!r}")
    if math.isnan(ttl) or ttl <= 0 or ttl > MAX_TTL:
        raise InvalidTTLError(f"{name} is a number of seconds above 0 and at most 100 years, got {ttl!r}")
    return float(ttl)


@dataclass(frozen=True)
class TTLConfig:
    """A store's expiry: ``default_ttl`` seconds for items written without a TTL of their own
    (None: they never expire), and whether a read restarts an item's TTL (``refresh_on_read``)."""

    default_ttl: float | None = None
    refresh_on_read: bool = False

    def __post_init__(self) -> None:
        check_ttl(self.default_ttl, "default_ttl")
        if not isinstance(self.refresh_on_read, bool):
            raise InvalidTTLError(f"refresh_on_read is True or False, got {self.refresh_on_read!r}")

    def refresh(self, asked: bool | None) -> bool:
        """Whether a read refreshes: ``asked`` when given, else the store's ``refresh_on_read``."""
        return self.refresh_on_read if asked is None else bool(asked)


#: No expiry unless a write asks for one.
NO_TTL: Final = TTLConfig()


def resolve_ttl(ttl: TTL, config: TTLConfig, name: str = "ttl") -> int | None:
    """A write's TTL in milliseconds (the store's default for :data:`DEFAULT`), checked; None
    for never."""
    seconds = config.default_ttl if ttl is DEFAULT else check_ttl(ttl, name)
    return None if seconds is None else max(1, round(seconds * 1000))


def now_ms() -> int:
    """Now, in milliseconds since the epoch: what expiry times are compared with."""
    return time.time_ns() // 1_000_000


def expires_at(ttl_ms: int | None, now: int) -> int | None:
    """When an item written (or refreshed) at ``now`` with ``ttl_ms`` expires; None for never."""
    return None if ttl_ms is None else now + ttl_ms


class Sweeper:
    """A background task that calls ``sweep`` every ``interval`` seconds until stopped (an
    ``async with`` block stops it on the way out). A sweep that fails is kept in ``errors`` (the
    last few) and the next one runs on time: a long-running process is not brought down by it."""

    def __init__(self, sweep: Callable[[], Awaitable[Any]], interval: float) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
            raise InvalidTTLError(f"a sweep interval is a number of seconds above 0, got {interval!r}")
        if math.isinf(interval) or interval > MAX_TTL:
            raise InvalidTTLError(f"a sweep interval is at most 100 years, got {interval!r}")
        self._sweep = sweep
        self._interval = float(interval)
        self._task: asyncio.Task[None] | None = None
        self.sweeps = 0
        self.errors: list[BaseException] = []

    @property
    def running(self) -> bool:
        """Whether the task is running."""
        return self._task is not None and not self._task.done()

    def start(self) -> Sweeper:
        """Start the task on the running loop (a no-op while it runs); returns self."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="axio-expiry-sweeper")
        return self

    async def stop(self) -> None:
        """Stop the task and wait for it (a sweep under way is cancelled; its transaction rolls back)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def sweep_now(self) -> Any:
        """Run one sweep now and return what it returned."""
        result = await self._sweep()
        self.sweeps += 1
        return result

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep_now()
            except Exception as exc:  # kept for the owner to see; the next sweep still runs
                self.errors = [*self.errors[-9:], exc]
            await asyncio.sleep(self._interval)

    async def __aenter__(self) -> Sweeper:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def start_sweeper(sweep: Callable[[], Awaitable[Any]], interval: float) -> Sweeper:
    """A :class:`Sweeper` calling ``sweep`` now and every ``interval`` seconds, started on the
    running loop; ``await sweeper.stop()`` ends it."""
    return Sweeper(sweep, interval).start()
