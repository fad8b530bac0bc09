"""``PostgresContextQueue``: pygents' context queue kept by name in PostgreSQL.

The semantics are :class:`axio_context_sqlite.pools.SQLiteContextQueue`'s: every change is one
transaction (an append that evicts writes both at once), reads are served from the process's
copy, which every change brings up to date (with what other writers appended before it: see
:mod:`.changes`) and :meth:`refresh` reloads after another process's change, and hooks fire in
the process that made the change. Many processes may append to one queue: each append locks
the queue's row, so none is lost (see :mod:`.rows`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

from axio_context.pools.base import QueueBase, check_limit, parse_dict, tags_of
from axio_context.pools.hooks import ContextQueueHook, Hook, rebuild_hooks, serialize_hooks
from axio_context.pools.items import ContextItem
from axio_context_sqlite.pools.rows import Entry, State
from axio_context_sqlite.pools.stored import encode_items

from ..connection import Pool
from . import rows
from .changes import apply_to_queue
from .stored import Stored, open_state

__all__ = ["PostgresContextQueue"]

T = TypeVar("T")
_INHERIT: Any = object()


class PostgresContextQueue(Stored, QueueBase[T], Generic[T]):
    """A :class:`~axio_context.pools.ContextQueue` in PostgreSQL; make one with :meth:`open`."""

    _items: deque[ContextItem[T]]

    @classmethod
    async def open(
        cls,
        pool: Pool,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        content_type: Any = Any,
        create: bool = True,
    ) -> PostgresContextQueue[Any]:
        """The queue ``name`` in the database of ``pool`` (from
        :func:`axio_context_postgres.connect`), created with ``limit`` and ``tags`` when
        missing; its content is decoded as ``content_type`` (msgspec's conversion)."""
        checked = check_limit(limit, optional=True)
        state = await open_state(
            pool, name, "queue", checked, None if tags is None else tags_of(tags), create=create
        )
        queue: PostgresContextQueue[Any] = cls.__new__(cls)
        queue._setup(pool, state, content_type)
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
        non-item, ContentEncodeError for content msgspec cannot encode: nothing written)."""
        self._check_items(items)
        packed = encode_items(list(items), "append")
        await self._fire(ContextQueueHook.BEFORE_APPEND, list(items), list(self._items))
        if self._wants(ContextQueueHook.ON_EVICT):
            await self.refresh()
            over = len(self._items) + len(items) - self.limit
            for old in (list(self._items) + list(items))[: max(0, over)]:
                await self._fire(ContextQueueHook.ON_EVICT, old)
        if not items:  # nothing to write; the hooks still fire, as in memory
            await self._fire(ContextQueueHook.AFTER_APPEND, [], list(self._items))
            return
        h, fresh, last = await rows.queue_append(self._pool, self._header.id, *self._seen, packed)
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
        if self._wants(ContextQueueHook.BEFORE_CLEAR):
            await self.refresh()
        await self._fire(ContextQueueHook.BEFORE_CLEAR, list(self._items))
        self._adopt(None, await rows.clear(self._pool, self._header.id))
        self._items, self._shared = deque(maxlen=self.limit), False
        await self._fire(ContextQueueHook.AFTER_CLEAR)

    async def branch(
        self, limit: int | None = None, hooks: list[Hook] | None = _INHERIT, *, name: str | None = None
    ) -> PostgresContextQueue[T]:
        """A child queue named ``name`` (default ``<name>/<n>``) that starts with this queue's
        items (the newest ``limit`` when smaller) and changes independently. One row is
        written, no item is copied; hooks are inherited unless ``hooks`` is given."""
        child_limit = self.limit if limit is None else check_limit(limit, optional=False)
        assert child_limit is not None
        child_hooks = list(self.hooks if hooks is _INHERIT else (hooks or []))
        h, stale = await rows.branch(
            self._pool,
            self._header.id,
            name,
            child_limit,
            None if hooks is _INHERIT else _names_or_none(child_hooks),
            self._header.version,
            [],
        )
        child: PostgresContextQueue[T] = type(self).__new__(type(self))
        child._child_of(self, h)
        child.hooks = child_hooks
        if stale is not None:
            child._shared = False
            child._load(stale)
        elif child_limit == self.limit:  # the same items: share the copy until one side changes
            child._items, child._shared, self._shared = self._items, True, True
        else:
            child._shared = False
            child._items = deque(list(self._items)[-child_limit:], maxlen=child_limit)
        return child

    @classmethod
    async def from_dict(
        cls, pool: Pool, name: str, data: Mapping[str, Any], *, content_type: Any = Any
    ) -> PostgresContextQueue[Any]:
        """Store :meth:`to_dict`'s output as a new queue ``name`` in one transaction: no hook
        fires, hooks resolved by name (UnregisteredHookError), unknown keys kept whole."""
        limit, items, hook_data, tags, extra = parse_dict(data)
        check_limit(limit, optional=False)
        hooks = rebuild_hooks(hook_data)
        packed = encode_items(items, "queue")
        tags_of(tags)
        state = await rows.create(
            pool, name, "queue", limit, sorted(tags), serialize_hooks(hooks), extra, packed, True
        )
        queue: PostgresContextQueue[Any] = cls.__new__(cls)
        queue._setup(pool, state, content_type)
        return queue


def _names_or_none(hooks: list[Hook]) -> dict[str, list[str]]:
    try:
        return serialize_hooks(hooks)
    except ValueError:
        return {}
