"""Following a session as other writers append to it (``show --follow``, the browser), the same
loop on every backend: a cheap version check a tick, the new messages read only when it changed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Final

import msgspec

from .errors import DatabaseLockedError
from .transcript import MessageRecord

__all__ = ["FollowCalls", "FollowUpdate", "follow_changes"]


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


class FollowCalls:
    """``follow`` as every backend gives it: :func:`follow_changes` over the backend's own cheap
    change probe (:meth:`_change_probe`) and its window of messages (:meth:`messages`)."""

    def _change_probe(self, session_id: str) -> Callable[[], Awaitable[object]]:
        raise NotImplementedError(f"{type(self).__name__} cannot follow a session")

    async def messages(
        self, session_id: str, start: int, end: int | None = None
    ) -> tuple[int, list[MessageRecord]]:
        """The session's message count and its messages at positions ``[start, end)``."""
        raise NotImplementedError(f"{type(self).__name__} cannot read a window of messages")

    async def follow(
        self,
        session_id: str,
        start: int,
        *,
        interval: float = 0.25,
        on_locked: Callable[[DatabaseLockedError], object] | None = None,
    ) -> AsyncGenerator[FollowUpdate, None]:
        """Yield each batch of messages appended to a session from position ``start`` on, as
        other connections commit them, until the caller stops iterating.

        Every ``interval`` seconds one probe of the backend's change mark; the session is read
        only when it changed. A locked database is passed to ``on_locked`` and tried again next
        tick (without ``on_locked`` it raises); a deleted session raises SessionNotFoundError.
        """
        changes = follow_changes(
            self._change_probe(session_id),
            lambda first: self.messages(session_id, first),
            start,
            interval,
            on_locked,
        )
        async with aclosing(changes):
            async for update in changes:
                yield update
