"""``SQLiteContextPool``: pygents' context pool kept by name in the database file, plus
:meth:`SQLiteContextPool.select`, which ranks items by description with the full-text index
and (given an embedder) the description embeddings, so an agent picks what to load.

Every change is one transaction (see :mod:`.rows`); ``get``, ``items`` and the other reads are
served from the process's copy, kept current by every change and by :meth:`refresh`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

import aiosqlite

from axio_context.embeddings import Embedder, check_embedder, vector_to_blob
from axio_context.pools.base import PoolBase, check_limit, parse_dict, tags_of
from axio_context.pools.hooks import ContextPoolHook, rebuild_hooks, serialize_hooks
from axio_context.pools.items import ContextItem
from axio_context.pools.selection import check_k, fuse

from ..store.calls import run
from . import rows, selecting
from .rows import Entry
from .stored import Stored, encode_items, open_state

__all__ = ["SQLiteContextPool"]

T = TypeVar("T")
_INHERIT: Any = object()
_DEPTH_MIN = 50  # candidates each ranking contributes to the fusion


class SQLiteContextPool(Stored, PoolBase[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextPool`; make one with :meth:`open`."""

    _items: dict[str, ContextItem[T]]
    _seqs: dict[str, int]
    embedder: Embedder | None

    @classmethod
    async def open(
        cls,
        conn: aiosqlite.Connection,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
        create: bool = True,
    ) -> SQLiteContextPool[Any]:
        """The pool ``name`` in the database of ``conn``, created with ``limit`` and ``tags``
        when missing. With an ``embedder``, each description is embedded as it is added and
        :meth:`select` ranks by meaning as well as by words."""
        checked = check_limit(limit, optional=True)
        if embedder is not None:
            check_embedder(embedder)
        state = await open_state(
            conn, name, "pool", checked, None if tags is None else tags_of(tags), create=create
        )
        pool: SQLiteContextPool[Any] = cls.__new__(cls)
        pool.embedder = embedder
        pool._setup(conn, state, content_type)
        return pool

    def _load(self, entries: list[Entry]) -> None:
        self._embedded: set[int] = set()  # entries known to have an embedding from the embedder
        self._items = {str(e.key): self._item(e) for e in entries}
        self._seqs = {str(e.key): e.seq for e in entries}

    def _own(self) -> None:
        if self._shared:
            self._items, self._seqs, self._shared = dict(self._items), dict(self._seqs), False

    @property
    def limit(self) -> int | None:
        return self._header.lim

    def _map(self) -> Mapping[str, ContextItem[T]]:
        return self._items

    def _bumped(self, size: int) -> None:
        self._header = self._header._replace(version=self._header.version + 1, size=size)

    async def add(self, item: ContextItem[T]) -> None:
        """Add or replace ``item`` in one transaction, evicting the oldest item of a full pool
        (ValueError without id or description; ContentEncodeError: nothing written)."""
        self._check_item(item)
        assert item.id is not None and item.description is not None
        ((_, _, packed, extra),) = encode_items([item], "add")
        vector = None
        if self.embedder is not None:
            (vec,) = await self.embedder.embed([item.description])
            vector = (self.embedder.model, vector_to_blob(vec))
        if self._wants(ContextPoolHook.ON_EVICT) or self._wants(ContextPoolHook.BEFORE_ADD):
            await self.refresh()
        full = self.limit is not None and item.id not in self._items and len(self._items) >= self.limit
        oldest = next(iter(self._items)) if full else None
        if oldest is not None:
            await self._fire(ContextPoolHook.ON_EVICT, self._items[oldest])
        await self._fire(ContextPoolHook.BEFORE_ADD, item)
        fresh, evicted, seq = await run(
            self._conn,
            rows.pool_add,
            self._header.id,
            self._header.version,
            item.id,
            item.description,
            packed,
            extra,
            oldest,
            vector,
        )
        if vector is not None:
            self._embedded.add(seq)
        if fresh is not None:
            self._adopt(fresh)
        else:
            self._own()
            if evicted is not None:
                del self._items[evicted], self._seqs[evicted]
            self._items[item.id] = item
            self._seqs[item.id] = seq
            self._bumped(len(self._items))
        await self._fire(ContextPoolHook.AFTER_ADD, item)

    async def remove(self, id: str) -> None:
        """Remove the item with this id, in one transaction (KeyError when there is none)."""
        item = self._items[id]
        await self._fire(ContextPoolHook.BEFORE_REMOVE, item)
        h = await run(self._conn, rows.pool_remove, self._header.id, id)
        if h is None:  # another process removed it first
            await self.refresh()
            raise KeyError(id)
        if h.version == self._header.version + 1:
            self._own()
            del self._items[id], self._seqs[id]
            self._header = h
        else:
            await self.refresh()
        await self._fire(ContextPoolHook.AFTER_REMOVE, item)

    async def clear(self) -> None:
        """Remove every item, in one transaction (branches keep theirs)."""
        if self._wants(ContextPoolHook.BEFORE_CLEAR):
            await self.refresh()
        await self._fire(ContextPoolHook.BEFORE_CLEAR, dict(self._items))
        self._adopt(None, await run(self._conn, rows.clear, self._header.id))
        self._items, self._seqs, self._shared = {}, {}, False
        await self._fire(ContextPoolHook.AFTER_CLEAR)

    async def branch(self, limit: int | None = _INHERIT, *, name: str | None = None) -> SQLiteContextPool[T]:
        """A child pool named ``name`` (default ``<name>/<n>``) with this pool's items, hooks
        and tags, changing independently. One row is written and no item copied (a smaller
        ``limit`` writes one removal per item it drops). No hook fires."""
        child_limit = self.limit if limit is _INHERIT else check_limit(limit, optional=True)
        over = 0 if child_limit is None else max(0, len(self._items) - child_limit)
        h, stale = await run(
            self._conn,
            rows.branch,
            self._header.id,
            name,
            child_limit,
            None,  # the hook names stored with the parent (from_dict's), not this process's hooks
            self._header.version,
            list(self._items)[:over],
        )
        child: SQLiteContextPool[T] = type(self).__new__(type(self))
        child._conn, child._content_type, child._decoder = self._conn, self._content_type, self._decoder
        child._header, child.tags, child.extra = h, self.tags, dict(self.extra)
        child.hooks, child.embedder = list(self.hooks), self.embedder
        child._embedded = set(self._embedded)
        if stale is not None:
            child._shared = False
            child._load(stale)
        elif over == 0:  # the same items: share the copy until one side changes
            child._items, child._seqs, child._shared, self._shared = self._items, self._seqs, True, True
        else:
            child._shared = False
            keep = list(self._items)[over:]
            child._items = {k: self._items[k] for k in keep}
            child._seqs = {k: self._seqs[k] for k in keep}
        return child

    async def select(self, query: str, k: int = 5) -> list[ContextItem[T]]:
        """The ``k`` items whose descriptions best match ``query``: full-text (bm25) and, with
        an embedder, cosine similarity of embeddings, fused by reciprocal rank. Items matching
        neither are left out; only descriptions are read, not every item's content."""
        check_k(k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        visible = {seq: key for key, seq in self._seqs.items()}
        depth = max(k, _DEPTH_MIN)
        rankings = [await run(self._conn, selecting.keyword_ranking, query, visible, depth)]
        if self.embedder is not None and visible:
            model = self.embedder.model
            unknown = [s for s in visible if s not in self._embedded]
            missing = await run(self._conn, selecting.missing_vectors, model, unknown) if unknown else []
            if missing:
                vecs = await self.embedder.embed([self._items[visible[s]].description or "" for s in missing])
                await run(
                    self._conn,
                    selecting.store_vectors,
                    model,
                    [(s, vector_to_blob(v)) for s, v in zip(missing, vecs, strict=True)],
                )
            self._embedded.update(unknown)
            (q,) = await self.embedder.embed([query])
            if any(q):
                owners = await run(self._conn, rows.chain_owners, self._header.id)
                rankings.append(
                    await run(
                        self._conn, selecting.vector_ranking, model, vector_to_blob(q), owners, visible, depth
                    )
                )
        return [self._items[key] for key in fuse(rankings, k) if key in self._items]

    @classmethod
    async def from_dict(
        cls,
        conn: aiosqlite.Connection,
        name: str,
        data: Mapping[str, Any],
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
    ) -> SQLiteContextPool[Any]:
        """Store :meth:`to_dict`'s output as a new pool ``name`` in one transaction, without
        hooks or eviction; hooks resolved by name (UnregisteredHookError); unknown keys kept."""
        limit, items, hook_data, tags, extra = parse_dict(data)
        check_limit(limit, optional=True)
        for item in items:
            if item.id is None:
                raise ValueError("ContextPool requires a ContextItem with 'id' set")
        hooks = rebuild_hooks(hook_data)
        packed = encode_items(items, "pool")
        tags_of(tags)
        state = await run(
            conn, rows.create, name, "pool", limit, sorted(tags), serialize_hooks(hooks), extra, packed, True
        )
        pool: SQLiteContextPool[Any] = cls.__new__(cls)
        pool.embedder = embedder
        pool._setup(conn, state, content_type)
        return pool
