"""``SQLContextQueue``: pygents' context queue kept by name in an SQL database, written once
(SQLite's ``SQLiteContextQueue`` and PostgreSQL's ``PostgresContextQueue`` choose the runner).

Every change is one transaction (see :mod:`.plans`): an append that also evicts writes both at
once, a crash leaves the queue as the last commit left it. Reads (``items``, ``len``, ...) are
served from the process's copy, which every change brings up to date (with what other writers
appended before it: see :mod:`.changes`) and :meth:`refresh` reloads. Hooks fire in the process
that made the change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Generic, Self, TypeVar

from axio_context.sql import Runner

from ..base import QueueBase, check_limit, parse_dict, tags_of
from ..hooks import ContextQueueHook, Hook, rebuild_hooks, serialize_hooks
from ..items import ContextItem
from . import plans
from .changes import apply_to_queue
from .dialect import PoolSQL
from .rows import Entry, State, encode_items
from .stored import Stored, open_state

__all__ = ["SQLContextQueue"]

T = TypeVar("T")
_INHERIT: Any = object()


class SQLContextQueue(Stored, QueueBase[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextQueue`; a backend's subclass opens it."""

    _items: deque[ContextItem[T]]

    @classmethod
    async def _open(
        cls,
        runner: Runner,
        sql: PoolSQL,
        name: str,
        limit: int | None,
        tags: Iterable[str] | None,
        content_type: Any,
        create: bool,
    ) -> Self:
        checked = check_limit(limit, optional=True)
        state = await open_state(
            runner, sql, name, "queue", checked, None if tags is None else tags_of(tags), create=create
        )
        queue = cls.__new__(cls)
        queue._setup(runner, sql, state, content_type)
        return queue

    @classmethod
    async def _from_dict(
        cls, runner: Runner, sql: PoolSQL, name: str, data: Mapping[str, Any], content_type: Any
    ) -> Self:
        limit, items, hook_data, tags, extra = parse_dict(data)
        check_limit(limit, optional=False)
        hooks = rebuild_hooks(hook_data)
        packed = encode_items(items, "queue")
        tags_of(tags)
        state = await runner.write(
            plans.create, sql, name, "queue", limit, sorted(tags), serialize_hooks(hooks), extra, packed, True
        )
        queue = cls.__new__(cls)
        queue._setup(runner, sql, state, content_type)
        return queue

    def _load(self, entries: list[Entry]) -> None:
        self._items = deque((self._item(e) for e in entries), maxlen=self.limit)

    def _own(self) -> deque[ContextItem[T]]:
        if self._shared:  # shared with a branch made in this process: copy before changing
            self._items, self._shared = deque(self._items, maxlen=self.limit), False
        return self._items

    @property
    def limit(self) -> int:
        assert self._header.lim is not None
        return self._header.lim

    def _view(self) -> list[ContextItem[T]]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    async def append(self, *items: ContextItem[T]) -> None:
        """Append items in one transaction, the oldest evicted when full (TypeError for a
        non-item, ContentEncodeError for content that cannot be stored: nothing written)."""
        self._check_items(items)
        packed = encode_items(list(items), "append")
        await self._settle()
        await self._fire(ContextQueueHook.BEFORE_APPEND, list(items), list(self._items))
        if self._wants(ContextQueueHook.ON_EVICT):
            await self.refresh()
            over = len(self._items) + len(items) - self.limit
            for old in (list(self._items) + list(items))[: max(0, over)]:
                await self._fire(ContextQueueHook.ON_EVICT, old)
        if not items:  # nothing to write; the hooks still fire, as in memory
            await self._fire(ContextQueueHook.AFTER_APPEND, [], list(self._items))
            return
        h, fresh, last = await self._runner.write(
            plans.queue_append, self._sql, self._header.id, self._seen, packed
        )
        if isinstance(fresh, State):  # the whole queue, this append included
            self._adopt(fresh)
        else:
            if fresh is not None:  # what other writers appended first
                apply_to_queue(self._own(), fresh, self._item)
            self._own().extend(items)
            self._header = h
        self._mark = last
        await self._fire(ContextQueueHook.AFTER_APPEND, list(items), list(self._items))

    async def clear(self) -> None:
        """Remove every item, in one transaction (branches keep theirs)."""
        await self._settle()
        if self._wants(ContextQueueHook.BEFORE_CLEAR):
            await self.refresh()
        await self._fire(ContextQueueHook.BEFORE_CLEAR, list(self._items))
        self._adopt(None, await self._runner.write(plans.clear, self._sql, self._header.id))
        self._items, self._shared = deque(maxlen=self.limit), False
        await self._fire(ContextQueueHook.AFTER_CLEAR)

    def branch(
        self, limit: int | None = None, hooks: list[Hook] | None = _INHERIT, *, name: str | None = None
    ) -> Self:
        """A child queue named ``name`` (default ``<name>/<n>``) that starts with this queue's
        items (the newest ``limit`` when smaller) and changes independently; hooks are inherited
        unless ``hooks`` is given. Synchronous: its one row is written on first use (or when
        awaited), no item is copied (see :mod:`.stored`)."""
        child_limit = self.limit if limit is None else check_limit(limit, optional=False)
        assert child_limit is not None
        child_hooks = list(self.hooks if hooks is _INHERIT else (hooks or []))
        child = type(self).__new__(type(self))
        child._branch_of(
            self, name, child_limit, None if hooks is _INHERIT else _names_or_none(child_hooks), []
        )
        child.hooks = child_hooks
        if child_limit == self.limit:  # the same items: share the copy until one side changes
            child._items, child._shared, self._shared = self._items, True, True
        else:
            child._shared = False
            child._items = deque(list(self._items)[-child_limit:], maxlen=child_limit)
        return child


def _names_or_none(hooks: list[Hook]) -> dict[str, list[str]]:
    try:
        return serialize_hooks(hooks)
    except ValueError:
        return {}
