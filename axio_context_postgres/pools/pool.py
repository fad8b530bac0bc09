"""``PostgresContextPool``: pygents' context pool kept by name in PostgreSQL, plus
:meth:`PostgresContextPool.select`, which ranks items by description with the ``tsvector``
index and (given an embedder) the description embeddings, with pgvector.

The semantics are :class:`axio_context_sqlite.pools.SQLiteContextPool`'s: every change is one
transaction that locks the pool's row (two writers take turns, none loses the other's update);
``get``, ``items`` and the other reads are served from the process's copy, kept current by every
change and by :meth:`refresh`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

from axio_context.embeddings import Embedder, check_embedder
from axio_context.pools.base import PoolBase, check_limit, parse_dict, tags_of
from axio_context.pools.hooks import ContextPoolHook, rebuild_hooks, serialize_hooks
from axio_context.pools.items import ContextItem
from axio_context.pools.selection import check_k, fuse
from axio_context_sqlite.pools.rows import Entry, State
from axio_context_sqlite.pools.stored import encode_items

from ..connection import Pool
from . import rows, selecting
from .changes import apply_to_pool
from .stored import Stored, open_state

__all__ = ["PostgresContextPool"]

T = TypeVar("T")
_INHERIT: Any = object()
_DEPTH_MIN = 50  # candidates each ranking contributes to the fusion


class PostgresContextPool(Stored, PoolBase[T], Generic[T]):
    """A :class:`~axio_context.pools.ContextPool` in PostgreSQL; make one with :meth:`open`."""

    _items: dict[str, ContextItem[T]]
    _seqs: dict[str, int]
    embedder: Embedder | None
    _pgvector: bool | None  # pgvector in the database: asked once, at the first select

    @classmethod
    async def open(
        cls,
        pool: Pool,
        name: str,
        limit: int | None = None,
        tags: Iterable[str] | None = None,
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
        create: bool = True,
    ) -> PostgresContextPool[Any]:
        """The pool ``name`` in the database of ``pool``, created with ``limit`` and ``tags``
        when missing. With an ``embedder``, each description is embedded as it is added and
        :meth:`select` ranks by meaning as well as by words."""
        checked = check_limit(limit, optional=True)
        if embedder is not None:
            check_embedder(embedder)
        state = await open_state(
            pool, name, "pool", checked, None if tags is None else tags_of(tags), create=create
        )
        out: PostgresContextPool[Any] = cls.__new__(cls)
        out.embedder = embedder
        out._pgvector = None
        out._setup(pool, state, content_type)
        return out

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
        vector = None
        if self.embedder is not None:
            (vec,) = await self.embedder.embed([item.description])
            vector = (self.embedder.model, vec)
        if self._wants(ContextPoolHook.ON_EVICT) or self._wants(ContextPoolHook.BEFORE_ADD):
            await self.refresh()
        full = self.limit is not None and item.id not in self._items and len(self._items) >= self.limit
        oldest = next(iter(self._items)) if full else None
        if oldest is not None:
            await self._fire(ContextPoolHook.ON_EVICT, self._items[oldest])
        await self._fire(ContextPoolHook.BEFORE_ADD, item)
        h, fresh, evicted, seq, ord_ = await rows.pool_add(
            self._pool, self._header.id, self._seen, packed, oldest, vector
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
        await self._fire(ContextPoolHook.BEFORE_REMOVE, item)
        h = await rows.pool_remove(self._pool, self._header.id, id)
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
        self._adopt(None, await rows.clear(self._pool, self._header.id))
        self._items, self._seqs, self._shared = {}, {}, False
        await self._fire(ContextPoolHook.AFTER_CLEAR)

    async def branch(
        self, limit: int | None = _INHERIT, *, name: str | None = None
    ) -> PostgresContextPool[T]:
        """A child pool named ``name`` (default ``<name>/<n>``) with this pool's items, hooks
        and tags, changing independently. One row is written and no item copied (a smaller
        ``limit`` writes one removal per item it drops). No hook fires."""
        child_limit = self.limit if limit is _INHERIT else check_limit(limit, optional=True)
        over = 0 if child_limit is None else max(0, len(self._items) - child_limit)
        h, stale = await rows.branch(
            self._pool,
            self._header.id,
            name,
            child_limit,
            None,  # the hook names stored with the parent (from_dict's), not this process's hooks
            self._header.version,
            list(self._items)[:over],
        )
        child: PostgresContextPool[T] = type(self).__new__(type(self))
        child._child_of(self, h)
        child.hooks, child.embedder, child._pgvector = list(self.hooks), self.embedder, self._pgvector
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
        """The ``k`` items whose descriptions best match ``query``: full-text (``tsvector``)
        and, with an embedder, cosine similarity of embeddings (pgvector), fused by reciprocal
        rank. Items matching neither are left out; only descriptions are read."""
        check_k(k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        visible = {seq: key for key, seq in self._seqs.items()}
        depth = max(k, _DEPTH_MIN)
        rankings = [await selecting.keyword_ranking(self._pool, query, visible, depth)]
        if self.embedder is not None and visible:
            model = self.embedder.model
            unknown = [s for s in visible if s not in self._embedded]
            missing = await selecting.missing_vectors(self._pool, model, unknown) if unknown else []
            if missing:
                vecs = await self.embedder.embed([self._items[visible[s]].description or "" for s in missing])
                await selecting.store_vectors(self._pool, model, list(zip(missing, vecs, strict=True)))
            self._embedded.update(unknown)
            (q,) = await self.embedder.embed([query])
            if any(q):
                if self._pgvector is None:
                    self._pgvector = await selecting.has_vector_extension(self._pool)
                rankings.append(
                    await selecting.vector_ranking(
                        self._pool, model, q, visible, depth, pgvector=self._pgvector
                    )
                )
        return [self._items[key] for key in fuse(rankings, k) if key in self._items]

    @classmethod
    async def from_dict(
        cls,
        pool: Pool,
        name: str,
        data: Mapping[str, Any],
        *,
        embedder: Embedder | None = None,
        content_type: Any = Any,
    ) -> PostgresContextPool[Any]:
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
        state = await rows.create(
            pool, name, "pool", limit, sorted(tags), serialize_hooks(hooks), extra, packed, True
        )
        out: PostgresContextPool[Any] = cls.__new__(cls)
        out.embedder, out._pgvector = embedder, None
        out._setup(pool, state, content_type)
        return out
