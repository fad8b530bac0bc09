"""``SQLiteContextQueue``: pygents' context queue kept by name in the database file.

Every change is one transaction (see :mod:`.rows`): an append that also evicts writes both at
once, a crash leaves the queue as the last commit left it. Reads (``items``, ``len``, ...) are
served from the process's copy, which every change brings up to date and :meth:`refresh`
reloads when another process changed the queue. Hooks fire in the process that made the change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

import aiosqlite

from axio_context.pools.base import QueueBase, check_limit, parse_dict, tags_of
from axio_context.pools.hooks import ContextQueueHook, Hook, rebuild_hooks, serialize_hooks
from axio_context.pools.items import ContextItem

from ..store.calls import run
from . import rows
from .rows import Entry
from .stored import Stored, encode_items, open_state

__all__ = ["SQLiteContextQueue"]

T = TypeVar("T")
_INHERIT: Any = object()


class SQLiteContextQueue(Stored, QueueBase[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextQueue`; make one with :meth:`open`."""

    _items: deque[ContextItem[T]]

    @classmethod
    async def open(
        cls,
        conn: aiosqlite.Connection,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        content_type: Any = Any,
        create: bool = True,
    ) -> SQLiteContextQueue[Any]:
        """The queue ``name`` in the database of ``conn`` (from
        :func:`axio_context_sqlite.connect`), created with ``limit`` and ``tags`` when missing;
        its content is decoded as ``content_type`` (msgspec's conversion)."""
        checked = check_limit(limit, optional=True)
        state = await open_state(
            conn, name, "queue", checked, None if tags is None else tags_of(tags), create=create
        )
        queue: SQLiteContextQueue[Any] = cls.__new__(cls)
        queue._setup(conn, state, content_type)
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
        fresh, _ = await run(self._conn, rows.queue_append, self._header.id, self._header.version, packed)
        if fresh is not None:
            self._adopt(fresh)
        else:
            self._own().extend(items)
            self._header = self._header._replace(
                version=self._header.version + 1, size=min(self.limit, self._header.size + len(items))
            )
        await self._fire(ContextQueueHook.AFTER_APPEND, list(items), list(self._items))

    async def clear(self) -> None:
        """Remove every item, in one transaction (branches keep theirs)."""
        if self._wants(ContextQueueHook.BEFORE_CLEAR):
            await self.refresh()
        await self._fire(ContextQueueHook.BEFORE_CLEAR, list(self._items))
        self._adopt(None, await run(self._conn, rows.clear, self._header.id))
        self._items, self._shared = deque(maxlen=self.limit), False
        await self._fire(ContextQueueHook.AFTER_CLEAR)

    async def branch(
        self, limit: int | None = None, hooks: list[Hook] | None = _INHERIT, *, name: str | None = None
    ) -> SQLiteContextQueue[T]:
        """A child queue named ``name`` (default ``<name>/<n>``) that starts with this queue's
        items (the newest ``limit`` when smaller) and changes independently. One row is
        written, no item is copied; hooks are inherited unless ``hooks`` is given."""
        child_limit = self.limit if limit is None else check_limit(limit, optional=False)
        assert child_limit is not None
        child_hooks = list(self.hooks if hooks is _INHERIT else (hooks or []))
        h, stale = await run(
            self._conn,
            rows.branch,
            self._header.id,
            name,
            child_limit,
            None if hooks is _INHERIT else _names_or_none(child_hooks),
            self._header.version,
            [],
        )
        child: SQLiteContextQueue[T] = type(self).__new__(type(self))
        child._conn, child._content_type, child._decoder = self._conn, self._content_type, self._decoder
        child._header, child.tags, child.extra = h, self.tags, dict(self.extra)
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
        cls, conn: aiosqlite.Connection, name: str, data: Mapping[str, Any], *, content_type: Any = Any
    ) -> SQLiteContextQueue[Any]:
        """Store :meth:`to_dict`'s output as a new queue ``name`` in one transaction: no hook
        fires, hooks resolved by name (UnregisteredHookError), unknown keys kept whole."""
        limit, items, hook_data, tags, extra = parse_dict(data)
        check_limit(limit, optional=False)
        hooks = rebuild_hooks(hook_data)
        packed = encode_items(items, "queue")
        tags_of(tags)
        state = await run(
            conn, rows.create, name, "queue", limit, sorted(tags), serialize_hooks(hooks), extra, packed, True
        )
        queue: SQLiteContextQueue[Any] = cls.__new__(cls)
        queue._setup(conn, state, content_type)
        return queue


def _names_or_none(hooks: list[Hook]) -> dict[str, list[str]]:
    try:
        return serialize_hooks(hooks)
    except ValueError:
        return {}
