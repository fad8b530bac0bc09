"""``SQLContextPool``: pygents' context pool kept by name in an SQL database, written once
(SQLite's ``SQLiteContextPool`` and PostgreSQL's ``PostgresContextPool`` choose the runner),
plus :meth:`SQLContextPool.select`, which ranks items by description with the backend's text
index and (given an embedder) the description embeddings, so an agent picks what to load.

Every change is one transaction (see :mod:`.plans`); ``get``, ``items`` and the other reads are
served from the process's copy, kept current by every change (with what other writers changed
before it: see :mod:`.changes`) and by :meth:`refresh`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, Self, TypeVar

from axio_context.embeddings import Embedder, check_embedder, vector_to_blob
from axio_context.sql import Runner

from ..base import PoolBase, check_limit, parse_dict, tags_of
from ..hooks import ContextPoolHook, rebuild_hooks, serialize_hooks
from ..items import ContextItem
from ..selection import check_k, fuse
from . import plans, selecting
from .changes import apply_to_pool
from .dialect import PoolSQL
from .rows import Entry, State, encode_items
from .stored import Stored, open_state

__all__ = ["SQLContextPool"]

T = TypeVar("T")
_INHERIT: Any = object()
_DEPTH_MIN = 50  # candidates each ranking contributes to the fusion


class SQLContextPool(Stored, PoolBase[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextPool`; a backend's subclass opens it."""

    _items: dict[str, ContextItem[T]]
    _seqs: dict[str, int]
    embedder: Embedder | None
    _native: bool | None  # the database ranks embeddings itself: asked at the first select

    @classmethod
    async def _open(
        cls,
        runner: Runner,
        sql: PoolSQL,
        name: str,
        limit: int | None,
        tags: Iterable[str] | None,
        embedder: Embedder | None,
        content_type: Any,
        create: bool,
    ) -> Self:
        checked = check_limit(limit, optional=True)
        if embedder is not None:
            check_embedder(embedder)
        state = await open_state(
            runner, sql, name, "pool", checked, None if tags is None else tags_of(tags), create=create
        )
        return cls._made(runner, sql, state, embedder, content_type)

    @classmethod
    def _made(
        cls, runner: Runner, sql: PoolSQL, state: State, embedder: Embedder | None, content_type: Any
    ) -> Self:
        pool = cls.__new__(cls)
        pool.embedder, pool._native = embedder, None
        pool._setup(runner, sql, state, content_type)
        return pool

    @classmethod
    async def _from_dict(
        cls,
        runner: Runner,
        sql: PoolSQL,
        name: str,
        data: Mapping[str, Any],
        embedder: Embedder | None,
        content_type: Any,
    ) -> Self:
        limit, items, hook_data, tags, extra = parse_dict(data)
        check_limit(limit, optional=True)
        for item in items:
            if item.id is None:
                raise ValueError("ContextPool requires a ContextItem with 'id' set")
        hooks = rebuild_hooks(hook_data)
        packed = encode_items(items, "pool")
        tags_of(tags)
        state = await runner.write(
            plans.create, sql, name, "pool", limit, sorted(tags), serialize_hooks(hooks), extra, packed, True
        )
        return cls._made(runner, sql, state, embedder, content_type)

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

    async def add(self, item: ContextItem[T]) -> None:
        """Add or replace ``item`` in one transaction, evicting the oldest item of a full pool
        (ValueError without id or description; ContentEncodeError: nothing written)."""
        self._check_item(item)
        assert item.id is not None and item.description is not None
        (packed,) = encode_items([item], "add")
        await self._settle()
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
        h, fresh, evicted, seq, ord_ = await self._runner.write(
            plans.pool_add, self._sql, self._header.id, self._seen, packed, oldest, vector
        )
        if isinstance(fresh, State):  # the whole pool, this add included
            self._adopt(fresh)
        else:
            self._own()
            if fresh is not None:  # what other writers changed first
                assert self._mark is not None  # (without a mark the pool came back whole)
                apply_to_pool(self._items, self._seqs, self._mark, fresh, self._item)
            if evicted is not None:
                self._items.pop(evicted, None)
                self._seqs.pop(evicted, None)
            if ord_ == seq:  # the key is new (or added again): it goes last
                self._items.pop(item.id, None)
            self._items[item.id] = item  # a key it had keeps its place (its ord)
            self._seqs[item.id] = seq
            self._header, self._mark = h, seq
            if len(self._items) != h.size:  # another writer removed a key and left no entry saying so
                await self._reload()
        if vector is not None:
            self._embedded.add(seq)
        await self._fire(ContextPoolHook.AFTER_ADD, item)

    async def remove(self, id: str) -> None:
        """Remove the item with this id, in one transaction (KeyError when there is none)."""
        item = self._items[id]
        await self._settle()
        await self._fire(ContextPoolHook.BEFORE_REMOVE, item)
        h = await self._runner.write(plans.pool_remove, self._sql, self._header.id, id)
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
        await self._settle()
        if self._wants(ContextPoolHook.BEFORE_CLEAR):
            await self.refresh()
        await self._fire(ContextPoolHook.BEFORE_CLEAR, dict(self._items))
        self._adopt(None, await self._runner.write(plans.clear, self._sql, self._header.id))
        self._items, self._seqs, self._shared = {}, {}, False
        await self._fire(ContextPoolHook.AFTER_CLEAR)

    def branch(self, limit: int | None = _INHERIT, *, name: str | None = None) -> Self:
        """A child pool named ``name`` (default ``<name>/<n>``) with this pool's items, hooks
        and tags, changing independently. Synchronous: its one row is written on first use (or
        when awaited) and no item copied (a smaller ``limit`` writes one removal per item it
        drops; see :mod:`.stored`). No hook fires."""
        child_limit = self.limit if limit is _INHERIT else check_limit(limit, optional=True)
        over = 0 if child_limit is None else max(0, len(self._items) - child_limit)
        child = type(self).__new__(type(self))
        # The hook names stored with the parent (from_dict's), not this process's hooks.
        child._branch_of(self, name, child_limit, None, list(self._items)[:over])
        child.hooks, child.embedder, child._native = list(self.hooks), self.embedder, self._native
        child._embedded = set(self._embedded)
        if over == 0:  # the same items: share the copy until one side changes
            child._items, child._seqs, child._shared, self._shared = self._items, self._seqs, True, True
        else:
            child._shared = False
            keep = list(self._items)[over:]
            child._items = {k: self._items[k] for k in keep}
            child._seqs = {k: self._seqs[k] for k in keep}
        return child

    async def select(self, query: str, k: int = 5) -> list[ContextItem[T]]:
        """The ``k`` items whose descriptions best match ``query``: the backend's full-text
        ranking and, with an embedder, cosine similarity of embeddings, fused by reciprocal
        rank. Items matching neither are left out; only descriptions are read."""
        check_k(k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        await self._written()
        run, sql = self._runner, self._sql
        visible = {seq: key for key, seq in self._seqs.items()}
        depth = max(k, _DEPTH_MIN)
        rankings = [await run.read(selecting.keyword_ranking, sql, query, visible, depth)]
        if self.embedder is not None and visible:
            model = self.embedder.model
            unknown = [s for s in visible if s not in self._embedded]
            missing = await run.read(selecting.missing_vectors, sql, model, unknown) if unknown else []
            if missing:
                vecs = await self.embedder.embed([self._items[visible[s]].description or "" for s in missing])
                blobs = [(s, vector_to_blob(v)) for s, v in zip(missing, vecs, strict=True)]
                await run.write(selecting.store_vectors, sql, model, blobs)
            self._embedded.update(unknown)
            (q,) = await self.embedder.embed([query])
            if any(q):
                if self._native is None:
                    self._native = await run.read(selecting.native_vectors, sql)
                rankings.append(
                    await run.read(
                        selecting.vector_ranking,
                        sql,
                        model,
                        vector_to_blob(q),
                        self._header.id,
                        visible,
                        depth,
                        self._native,
                    )
                )
        return [self._items[key] for key in fuse(rankings, k) if key in self._items]
