"""``ContextQueue``: pygents' bounded, branchable window of the newest context items, in memory.

The persisted versions with the same behaviour are written once in :mod:`axio_context.pools.sql`
(``SQLiteContextQueue``, ``PostgresContextQueue``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar, cast

from .base import QueueBase, check_limit, parse_dict, tags_of
from .hooks import ContextQueueHook, Hook, rebuild_hooks
from .items import ContextItem

__all__ = ["ContextQueue"]

T = TypeVar("T")
_INHERIT: Any = object()


class ContextQueue(QueueBase[T], Generic[T]):
    """The newest ``limit`` items; appending to a full window evicts the oldest."""

    def __init__(self, limit: int, tags: Iterable[str] | None = None) -> None:
        checked = cast(int, check_limit(limit, optional=False))
        self._items: deque[ContextItem[T]] = deque(maxlen=checked)
        self.tags = tags_of(tags)
        self.hooks: list[Hook] = []
        self.extra: dict[str, Any] = {}

    @property
    def limit(self) -> int:
        return cast(int, self._items.maxlen)

    def _view(self) -> list[ContextItem[T]]:
        return list(self._items)

    async def append(self, *items: ContextItem[T]) -> None:
        """Append items in order, evicting the oldest when full (TypeError for a non-item)."""
        self._check_items(items)
        await self._fire(ContextQueueHook.BEFORE_APPEND, list(items), list(self._items))
        for item in items:
            if len(self._items) == self.limit:
                await self._fire(ContextQueueHook.ON_EVICT, self._items[0])
            self._items.append(item)
        await self._fire(ContextQueueHook.AFTER_APPEND, list(items), list(self._items))

    async def clear(self) -> None:
        """Remove every item."""
        await self._fire(ContextQueueHook.BEFORE_CLEAR, list(self._items))
        self._items.clear()
        await self._fire(ContextQueueHook.AFTER_CLEAR)

    def branch(self, limit: int | None = None, hooks: list[Hook] | None = _INHERIT) -> ContextQueue[T]:
        """A child starting from this queue's items (the newest ``limit`` of them when smaller),
        changing independently; it inherits the hooks unless ``hooks`` is given (None: none)."""
        child: ContextQueue[T] = ContextQueue(self.limit if limit is None else limit, tags=self.tags)
        child.hooks = list(self.hooks if hooks is _INHERIT else (hooks or []))
        child._items.extend(self._items)
        child.extra = dict(self.extra)
        return child

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextQueue[Any]:
        """A queue from :meth:`to_dict`'s output; hooks by name from the HookRegistry
        (UnregisteredHookError), no hook fires; keys of a newer version are kept."""
        limit, items, hooks, tags, extra = parse_dict(data)
        queue: ContextQueue[Any] = cls(limit, tags=tags)
        queue._items.extend(items)
        queue.hooks = rebuild_hooks(hooks)
        queue.extra = extra
        return queue
