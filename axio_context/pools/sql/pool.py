"""``SQLContextPool``: pygents' context pool kept by name in an SQL database, written once
(SQLite's ``SQLiteContextPool`` and PostgreSQL's ``PostgresContextPool`` choose the runner),
plus :meth:`SQLContextPool.select`, which ranks items by description with the backend's text
index and (given an embedder) the description embeddings, so an agent picks what to load.

Every change is one transaction (see :mod:`.plans`); ``get``, ``items`` and the other reads are
served from the process's copy, kept current by every change (with what other writers changed
before it: see :mod:`.changes`) and by :meth:`refresh`. An item may expire (``ttl=``, see
:mod:`.expiry`): the copy knows when, and leaves it out from then on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Generic, Self, TypeVar

from axio_context.embeddings import Embedder, check_embedder, vector_to_blob
from axio_context.expiry import DEFAULT, NO_TTL, TTL, TTLConfig, now_ms, resolve_ttl
from axio_context.sql import Runner
from axio_context.sql.expiry import SWEEP_BATCH

from ..base import PoolBase, check_limit, parse_dict, tags_of
from ..hooks import ContextPoolHook, rebuild_hooks, serialize_hooks
from ..items import ContextItem
from ..selection import check_k, fuse
from . import expiry, plans, selecting
from .changes import apply_to_pool
from .dialect import PoolSQL
from .rows import Entry, State, encode_items
from .stored import Stored, open_state

__all__ = ["SQLContextPool"]

T = TypeVar("T")
_INHERIT: Any = object()
_DEPTH_MIN = 50  # candidates each ranking contributes to the fusion


def _check_config(ttl: object) -> None:
    if not isinstance(ttl, TTLConfig):
        raise TypeError(f"ttl must be a TTLConfig, got {type(ttl).__name__}")


class SQLContextPool(Stored, PoolBase[T], Generic[T]):
    """A persisted :class:`~axio_context.pools.ContextPool`; a backend's subclass opens it."""

    _items: dict[str, ContextItem[T]]  # with expired items a sweep has not turned into removals
    _seqs: dict[str, int]
    _expires: dict[str, int]  # when the items that have a TTL expire (ms since the epoch)
    _view: tuple[int, dict[str, ContextItem[T]]] | None  # the live items, and until when
    _ttl: TTLConfig
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
        ttl: TTLConfig = NO_TTL,
    ) -> Self:
        checked = check_limit(limit, optional=True)
        _check_config(ttl)
        if embedder is not None:
            check_embedder(embedder)
        state = await open_state(
            runner, sql, name, "pool", checked, None if tags is None else tags_of(tags), create=create
        )
        return cls._made(runner, sql, state, embedder, content_type, ttl)

    @classmethod
    def _made(
        cls,
        runner: Runner,
        sql: PoolSQL,
        state: State,
        embedder: Embedder | None,
        content_type: Any,
        ttl: TTLConfig = NO_TTL,
    ) -> Self:
        pool = cls.__new__(cls)
        pool.embedder, pool._native, pool._ttl = embedder, None, ttl
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
        ttl: TTLConfig = NO_TTL,
    ) -> Self:
        limit, items, hook_data, tags, extra = parse_dict(data)
        check_limit(limit, optional=True)
        _check_config(ttl)
        for item in items:
            if item.id is None:
                raise ValueError("ContextPool requires a ContextItem with 'id' set")
        hooks = rebuild_hooks(hook_data)
        packed = encode_items(items, "pool")
        tags_of(tags)
        state = await runner.write(
            plans.create,
            sql,
            name,
            "pool",
            limit,
            sorted(tags),
            serialize_hooks(hooks),
            extra,
            packed,
            True,
            resolve_ttl(DEFAULT, ttl),
            now_ms(),
        )
        return cls._made(runner, sql, state, embedder, content_type, ttl)

    def _load(self, entries: list[Entry]) -> None:
        self._embedded: set[int] = set()  # entries known to have an embedding from the embedder
        self._items = {str(e.key): self._item(e) for e in entries}
        self._seqs = {str(e.key): e.seq for e in entries}
        self._expires = {str(e.key): e.expires_at for e in entries if e.expires_at is not None}
        self._view = None

    def _own(self) -> None:
        self._view = None  # the copy is about to change
        if self._shared:
            self._items, self._seqs, self._shared = dict(self._items), dict(self._seqs), False
            self._expires = dict(self._expires)

    @property
    def limit(self) -> int | None:
        return self._header.lim

    @property
    def ttl(self) -> TTLConfig:
        """The pool's expiry: ``default_ttl`` for items added without a ``ttl`` of their own."""
        return self._ttl

    def _map(self) -> Mapping[str, ContextItem[T]]:
        """The items not expired now (the copy itself while none of them has expired)."""
        if not self._expires:
            return self._items
        now = now_ms()
        if self._view is not None and now < self._view[0]:
            return self._view[1]
        expired = {k for k, t in self._expires.items() if t <= now}
        live = {k: v for k, v in self._items.items() if k not in expired} if expired else self._items
        until = min((t for t in self._expires.values() if t > now), default=2**63 - 1)
        self._view = (until, live)  # good until the next item expires (or the copy changes)
        return live

    async def add(self, item: ContextItem[T], *, ttl: TTL = DEFAULT) -> None:
        """Add or replace ``item`` in one transaction, evicting the oldest item of a full pool
        (ValueError without id or description; ContentEncodeError or InvalidTTLError: nothing
        written). ``ttl``: seconds until it expires (None: never; default: the pool's)."""
        self._check_item(item)
        assert item.id is not None and item.description is not None
        ttl_ms = resolve_ttl(ttl, self._ttl)
        (packed,) = encode_items([item], "add")
        await self._settle()
        vector = None
        if self.embedder is not None:
            (vec,) = await self.embedder.embed([item.description])
            vector = (self.embedder.model, vector_to_blob(vec))
        if self._wants(ContextPoolHook.ON_EVICT) or self._wants(ContextPoolHook.BEFORE_ADD):
            await self.refresh()
        live = self._map()
        full = self.limit is not None and item.id not in live and len(live) >= self.limit
        oldest = next(iter(live)) if full else None
        if oldest is not None:
            await self._fire(ContextPoolHook.ON_EVICT, live[oldest])
        await self._fire(ContextPoolHook.BEFORE_ADD, item)
        now = now_ms()
        h, fresh, evicted, seq, ord_ = await self._runner.write(
            plans.pool_add, self._sql, self._header.id, self._seen, packed, oldest, vector, ttl_ms, now
        )
        if isinstance(fresh, State):  # the whole pool, this add included
            self._adopt(fresh)
        else:
            self._own()
            if fresh is not None:  # what other writers changed first
                assert self._mark is not None  # (without a mark the pool came back whole)
                apply_to_pool(self._items, self._seqs, self._expires, self._mark, fresh, self._item)
            if evicted is not None:
                self._items.pop(evicted, None)
                self._seqs.pop(evicted, None)
                self._expires.pop(evicted, None)
            if ord_ == seq:  # the key is new (or added again): it goes last
                self._items.pop(item.id, None)
            self._items[item.id] = item  # a key it had keeps its place (its ord)
            self._seqs[item.id] = seq
            self._expires.pop(item.id, None)
            if ttl_ms is not None:
                self._expires[item.id] = now + ttl_ms
            self._header, self._mark = h, seq
            if len(self._items) != h.size:  # another writer removed a key and left no entry saying so
                await self._reload()
        if vector is not None:
            self._embedded.add(seq)
        await self._fire(ContextPoolHook.AFTER_ADD, item)

    async def remove(self, id: str) -> None:
        """Remove the item with this id, in one transaction (KeyError when there is none)."""
        item = self._map()[id]
        await self._settle()
        await self._fire(ContextPoolHook.BEFORE_REMOVE, item)
        h = await self._runner.write(plans.pool_remove, self._sql, self._header.id, id, now_ms())
        if h is None:  # another process removed it first
            await self.refresh()
            raise KeyError(id)
        if h.version == self._header.version + 1:
            self._own()
            del self._items[id], self._seqs[id]
            self._expires.pop(id, None)
            self._header = h
        else:
            await self.refresh()
        await self._fire(ContextPoolHook.AFTER_REMOVE, item)

    async def clear(self) -> None:
        """Remove every item, in one transaction (branches keep theirs)."""
        await self._settle()
        if self._wants(ContextPoolHook.BEFORE_CLEAR):
            await self.refresh()
        await self._fire(ContextPoolHook.BEFORE_CLEAR, dict(self._map()))
        self._adopt(None, await self._runner.write(plans.clear, self._sql, self._header.id))
        self._items, self._seqs, self._expires, self._shared, self._view = {}, {}, {}, False, None
        await self._fire(ContextPoolHook.AFTER_CLEAR)

    def branch(self, limit: int | None = _INHERIT, *, name: str | None = None) -> Self:
        """A child pool named ``name`` (default ``<name>/<n>``) with this pool's items, hooks
        and tags, changing independently. Synchronous: its one row is written on first use (or
        when awaited) and no item copied (a smaller ``limit`` writes one removal per item it
        drops; see :mod:`.stored`). No hook fires."""
        child_limit = self.limit if limit is _INHERIT else check_limit(limit, optional=True)
        live = self._map()
        over = 0 if child_limit is None else max(0, len(live) - child_limit)
        drop = list(live)[:over]
        child = type(self).__new__(type(self))
        # The hook names stored with the parent (from_dict's), not this process's hooks.
        child._branch_of(self, name, child_limit, None, drop)
        child.hooks, child.embedder, child._native = list(self.hooks), self.embedder, self._native
        child._embedded, child._ttl, child._view = set(self._embedded), self._ttl, None
        if over == 0:  # the same items: share the copy until one side changes
            child._items, child._seqs, child._shared, self._shared = self._items, self._seqs, True, True
            child._expires = self._expires
        else:
            child._shared = False
            gone = set(drop)
            keep = [k for k in self._items if k not in gone]
            child._items = {k: self._items[k] for k in keep}
            child._seqs = {k: self._seqs[k] for k in keep}
            child._expires = {k: t for k, t in self._expires.items() if k not in gone}
        return child

    async def select(
        self, query: str, k: int = 5, *, refresh_ttl: bool | None = None
    ) -> list[ContextItem[T]]:
        """The ``k`` items whose descriptions best match ``query``: the backend's full-text
        ranking and, with an embedder, cosine similarity of embeddings, fused by reciprocal
        rank. Items matching neither are left out; only descriptions are read. With
        ``refresh_ttl`` (default: the pool's ``refresh_on_read``) the TTLs of those returned
        start again (:meth:`touch`)."""
        check_k(k)
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {type(query).__name__}")
        await self._written()
        run, sql = self._runner, self._sql
        live = self._map()
        visible = {seq: key for key, seq in self._seqs.items() if key in live}
        depth = max(k, _DEPTH_MIN)
        rankings = [await run.read(selecting.keyword_ranking, sql, query, visible, depth)]
        if self.embedder is not None and visible:
            model = self.embedder.model
            unknown = [s for s in visible if s not in self._embedded]
            missing = await run.read(selecting.missing_vectors, sql, model, unknown) if unknown else []
            if missing:
                vecs = await self.embedder.embed([live[visible[s]].description or "" for s in missing])
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
        found = [live[key] for key in fuse(rankings, k) if key in live]
        if self._ttl.refresh(refresh_ttl):
            await self.touch(*[str(i.id) for i in found])
        return found

    async def touch(self, *ids: str) -> None:
        """Start the TTL of these items again from now, in one transaction (items without a
        TTL, expired or absent are left alone). Each refreshed item is a new entry in this
        pool's log, in its place: a branch sharing the old entry keeps the old expiry."""
        live = self._map()
        keys = [i for i in dict.fromkeys(ids) if i in live and i in self._expires]
        if not keys:
            return
        await self._settle()
        h, before, done = await self._runner.write(expiry.touch, self._sql, self._header.id, keys, now_ms())
        if not done:
            return
        if before != self._header.version:  # another writer changed the pool meanwhile
            await self._reload()
            return
        self._own()
        for key, (old, seq, until) in done.items():
            self._seqs[key], self._expires[key] = seq, until
            if old in self._embedded:
                self._embedded.add(seq)
        self._header, self._mark = h, max(seq for _, seq, _ in done.values())

    async def count_expired(self) -> int:
        """How many expired items wait for a sweep in every pool of this database (as a blob
        store counts its database's)."""
        return await expiry.SQLPoolExpiry(self._runner, self._sql).count_expired()

    async def sweep_expired(self, *, batch: int = SWEEP_BATCH) -> int:
        """Sweep every pool of this database (see :mod:`.expiry`: what each shows stays the
        same), at most ``batch`` entries a transaction; how many went."""
        gone = await expiry.SQLPoolExpiry(self._runner, self._sql).sweep_expired(batch=batch)
        await self.refresh()
        return gone
