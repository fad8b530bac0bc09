"""Following a session as other writers append to it (``show --follow``, the browser), the same
loop on every backend: a cheap version check a tick, the new messages read only when it changed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Final

import msgspec

from .errors import DatabaseLockedError
from .transcript import MessageRecord

__all__ = ["FollowUpdate", "follow_changes"]


class FollowUpdate(msgspec.Struct, frozen=True):
    """Messages a follower has not seen yet, from position ``start`` on.

    ``reset`` is True when the session was rewritten below what was seen (cleared, popped or
    rolled back): ``messages`` then are its whole history from ``start`` (0) again.
    """

    start: int
    messages: list[MessageRecord]
    reset: bool = False


async def follow_changes(
    version: Callable[[], Awaitable[object]],
    messages: Callable[[int], Awaitable[tuple[int, list[MessageRecord]]]],
    start: int,
    interval: float,
    on_locked: Callable[[DatabaseLockedError], object] | None,
) -> AsyncGenerator[FollowUpdate, None]:
    """Yield each batch of a session's messages from position ``start`` on as writers commit
    them: every ``interval`` seconds one ``version()`` check, and ``messages(from)`` (the
    session's count and its messages from there) only when the version changed."""
    if interval <= 0:
        raise ValueError(f"interval must be positive, not {interval}")
    seen = start
    last: object = _NEVER
    while True:
        try:
            now = await version()
            if now != last:
                count, fresh = await messages(seen)
                last = now
                if count < seen:
                    _, fresh = await messages(0)
                    seen = len(fresh)
                    yield FollowUpdate(0, fresh, reset=True)
                elif fresh:
                    first, seen = seen, seen + len(fresh)
                    yield FollowUpdate(first, fresh)
                    if seen < count:
                        last = _NEVER  # more than one window arrived: read on at once
                        continue
        except DatabaseLockedError as exc:
            if on_locked is None:
                raise
            on_locked(exc)
        await asyncio.sleep(interval)


#: The version before the first check: equal to no version a backend gives.
_NEVER: Final = object()
