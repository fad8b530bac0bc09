"""``ContextPool``: pygents' keyed, optionally bounded collection of context items, in memory.

Beyond pygents, :meth:`ContextPool.select` ranks the items by description against a query.
The persisted versions are written once in :mod:`axio_context.pools.sql` (``SQLiteContextPool``,
``PostgresContextPool``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

from axio_context.embeddings import Embedder

from .base import PoolBase, check_limit, parse_dict, tags_of
from .hooks import ContextPoolHook, Hook, rebuild_hooks
from .items import ContextItem
from .selection import check_k, cosine, fuse, word_ranking

__all__ = ["ContextPool"]

T = TypeVar("T")
_INHERIT: Any = object()


class ContextPool(PoolBase[T], Generic[T]):
    """Items by id in insertion order; with a ``limit``, adding a new id to a full pool evicts
    the oldest. ``embedder`` (optional) lets :meth:`select` rank by meaning too."""

    def __init__(
        self, limit: int | None = None, tags: Iterable[str] | None = None, *, embedder: Embedder | None = None
    ) -> None:
        self._limit = check_limit(limit, optional=True)
        self._items: dict[str, ContextItem[T]] = {}
        self.tags = tags_of(tags)
        self.hooks: list[Hook] = []
        self.extra: dict[str, Any] = {}
        self.embedder = embedder

    @property
    def limit(self) -> int | None:
        return self._limit

    def _map(self) -> Mapping[str, ContextItem[T]]:
        return self._items

    async def add(self, item: ContextItem[T]) -> None:
        """Add ``item`` (ValueError without id or description). The same id replaces the old
        item in its place, with no eviction; hooks fire either way."""
        self._check_item(item)
        assert item.id is not None
        if self._limit is not None and item.id not in self._items and len(self._items) >= self._limit:
            oldest = next(iter(self._items))
            await self._fire(ContextPoolHook.ON_EVICT, self._items[oldest])
            del self._items[oldest]
        await self._fire(ContextPoolHook.BEFORE_ADD, item)
        self._items[item.id] = item
        await self._fire(ContextPoolHook.AFTER_ADD, item)

    async def remove(self, id: str) -> None:
        """Remove the item with this id (KeyError when there is none)."""
        item = self._items[id]
        await self._fire(ContextPoolHook.BEFORE_REMOVE, item)
        del self._items[id]
        await self._fire(ContextPoolHook.AFTER_REMOVE, item)

    async def clear(self) -> None:
        """Remove every item."""
        await self._fire(ContextPoolHook.BEFORE_CLEAR, dict(self._items))
        self._items.clear()
        await self._fire(ContextPoolHook.AFTER_CLEAR)

    def branch(self, limit: int | None = _INHERIT) -> ContextPool[T]:
        """A child with this pool's items, hooks and tags, changing independently; a smaller
        ``limit`` keeps the newest items. No hook fires during the copy."""
        child: ContextPool[T] = ContextPool(
            self._limit if limit is _INHERIT else limit, tags=self.tags, embedder=self.embedder
        )
        child.hooks = list(self.hooks)
        child.extra = dict(self.extra)
        items = list(self._items.items())
        if child._limit is not None:
            items = items[max(0, len(items) - child._limit) :]
        child._items = dict(items)
        return child

    async def select(self, query: str, k: int = 5) -> list[ContextItem[T]]:
        """The ``k`` items whose descriptions best match ``query``: by shared words and, with an
        embedder, by meaning, fused by reciprocal rank. Items matching neither are left out."""
        check_k(k)
        pairs = [(key, item.description or "") for key, item in self._items.items()]
        rankings = [word_ranking(query, pairs)]
        if self.embedder is not None and pairs:
            vectors = await self.embedder.embed([query] + [d for _, d in pairs])
            q = vectors[0]
            sims = [(cosine(q, v), i) for i, v in enumerate(vectors[1:])]
            rankings.append([pairs[i][0] for s, i in sorted(sims, key=lambda x: (-x[0], x[1])) if s > 0])
        return [self._items[key] for key in fuse(rankings, k)]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextPool[Any]:
        """A pool from :meth:`to_dict`'s output, restored without hooks or eviction; hooks by
        name from the HookRegistry (UnregisteredHookError); keys of a newer version are kept."""
        limit, items, hooks, tags, extra = parse_dict(data)
        pool: ContextPool[Any] = cls(limit, tags=tags)
        for item in items:
            if item.id is None:
                raise ValueError("ContextPool requires a ContextItem with 'id' set")
            pool._items[item.id] = item
        pool.hooks = rebuild_hooks(hooks)
        pool.extra = extra
        return pool
