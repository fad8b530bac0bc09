"""What a persisted queue and pool share: the runner and the backend's statements, the
container's header, the codec of item content, the process's copy of what the container holds,
opening by name, and branches written on first use.

**Branches are made synchronously** (pygents' ``branch()`` is not awaited): ``child =
pool.branch()`` returns the child at once, holding this process's copy of the parent's items,
and writes its row (one row, no item copied) the first time it is needed: before the child's
first change, ``refresh`` or ``select``, before the parent's next change (so the parent never
deletes an entry the child still shows), or when the child is awaited (``await pool.branch()``
is the same child, written). An unnamed branch learns its name (``<parent>/<n>``) then. A branch
dropped unused is never written. When another handle changed the parent before the branch was
written, the branch is the parent as it is then, as any stale copy catches up.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Generator
from typing import Any, Self

import msgspec

from axio_context.expiry import now_ms
from axio_context.sql import Runner

from ..errors import ContextPoolError, PoolConfigError, PoolKindError, PoolNotFoundError
from ..hooks import Hook, rebuild_hooks
from ..items import ContextItem
from . import plans
from .changes import Seen
from .dialect import PoolSQL
from .rows import Entry, Header, State, decode_extra, decode_hooks, decode_object, decode_tags

__all__ = ["Stored", "open_state"]


async def open_state(
    runner: Runner,
    sql: PoolSQL,
    name: str,
    kind: str,
    limit: int | None,
    tags: frozenset[str] | None,
    *,
    create: bool = True,
) -> State:
    """The container ``name`` (created empty when missing and ``create``), checked to be a
    ``kind`` with this limit and these tags when they are given."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a {kind} needs a non-empty name, got {name!r}")
    state = await runner.read(plans.load, sql, name)
    if state is None:
        if not create:
            raise PoolNotFoundError(f"no queue or pool named {name!r}")
        if kind == "queue" and limit is None:
            raise ValueError(f"queue {name!r} does not exist yet: creating it needs a limit")
        state = await runner.write(plans.create, sql, name, kind, limit, sorted(tags or ()), {}, {}, [])
    h = state.header
    if h.kind != kind:
        raise PoolKindError(f"{name!r} is a {h.kind}, not a {kind}")
    if limit is not None and h.lim != limit:
        raise PoolConfigError(f"{kind} {name!r} has limit {h.lim}, opened with limit {limit}")
    if tags is not None and frozenset(decode_tags(h.tags)) != tags:
        raise PoolConfigError(
            f"{kind} {name!r} has tags {sorted(decode_tags(h.tags))}, opened with {sorted(tags)}"
        )
    return state


class _Pending:
    """A branch not written yet: its parent, the parent's version when it was taken, and what
    the row will say."""

    __slots__ = ("drop", "hooks", "lock", "name", "parent", "version")

    def __init__(
        self, parent: Stored, name: str | None, hooks: dict[str, list[str]] | None, drop: list[str]
    ) -> None:
        self.parent, self.name, self.hooks, self.drop = parent, name, hooks, drop
        self.version = parent._header.version
        self.lock = asyncio.Lock()


class Stored:
    """The state a persisted container keeps in the process."""

    hooks: list[Hook]
    tags: frozenset[str]
    extra: dict[str, Any]
    _header: Header

    def _setup(self, runner: Runner, sql: PoolSQL, state: State, content_type: Any) -> None:
        self._runner, self._sql = runner, sql
        self._content_type = content_type
        self._decoder: msgspec.msgpack.Decoder[Any] = msgspec.msgpack.Decoder(content_type)
        self._header = state.header
        self.tags = frozenset(decode_tags(state.header.tags))
        self.extra = decode_object(state.header.extra)
        self.hooks = rebuild_hooks(decode_hooks(state.header.hooks))
        self._shared = False
        self._mark: int | None = None  # the newest own entry the copy reflects (None: unknown)
        self._pending: _Pending | None = None
        self._branches: weakref.WeakSet[Stored] = weakref.WeakSet()
        self._load(state.entries)

    def _branch_of(
        self,
        parent: Stored,
        name: str | None,
        lim: int | None,
        hooks: dict[str, list[str]] | None,
        drop: list[str],
    ) -> None:
        """Become a pending branch of ``parent`` (written on first use, see the module)."""
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValueError(f"a branch needs a non-empty name, got {name!r}")
        self._runner, self._sql = parent._runner, parent._sql
        self._content_type, self._decoder = parent._content_type, parent._decoder
        p = parent._header
        self._header = p._replace(id=-1, name=name or "", parent=p.id, lim=lim, version=0)
        self.tags, self.extra = parent.tags, dict(parent.extra)
        self._mark = None
        self._pending = _Pending(parent, name, hooks, drop)
        self._branches = weakref.WeakSet()
        parent._branches.add(self)

    def _load(self, entries: list[Entry]) -> None:
        raise NotImplementedError

    def _item(self, e: Entry) -> ContextItem[Any]:
        extra = None if e.extra is None else decode_extra(e.extra)
        return ContextItem(self._decoder.decode(e.content), e.description, e.key, extra)

    def _adopt(self, state: State | None, h: Header | None = None) -> None:
        """Take a fresh state (after another writer's change) or just the new header."""
        if state is not None:
            self._header = state.header
            self._shared = False
            self._mark = None
            self._load(state.entries)
        elif h is not None:
            self._header = h

    @property
    def _seen(self) -> Seen:
        """What a write tells the database of this copy: version, mark, ``base_seq``."""
        return self._header.version, self._mark, self._header.base_seq

    @property
    def name(self) -> str:
        """The container's name in the database."""
        if self._pending is not None and self._pending.name is None:
            raise ContextPoolError("an unnamed branch is named when it is written: await it first")
        return self._header.name

    async def _written(self) -> None:
        """Write this branch's row if it is still pending (its parent's first)."""
        pending = self._pending
        if pending is None:
            return
        async with pending.lock:
            if self._pending is None:  # written while this waited
                return
            parent = pending.parent
            await parent._written()
            lim = self._header.lim
            h, stale = await self._runner.write(
                plans.branch,
                self._sql,
                parent._header.id,
                pending.name,
                lim,
                pending.hooks,
                pending.version,
                pending.drop,
                now_ms(),
            )
            self._pending = None
            parent._branches.discard(self)
            self._header = h
            if stale is not None:
                self._shared = False
                self._load(stale)

    async def _settle(self) -> None:
        """Before a change: this container written, and the branches taken from it here."""
        await self._written()
        for child in list(self._branches):
            await child._written()

    def __await__(self) -> Generator[Any, None, Self]:
        """``await pool.branch()``: the branch, written."""
        return self._awaited().__await__()

    async def _awaited(self) -> Self:
        await self._written()
        return self

    async def refresh(self) -> bool:
        """Reload when another process or connection changed the container; True if it did."""
        await self._written()
        if await self._runner.read(plans.version, self._sql, self._header.id) == self._header.version:
            return False
        await self._reload()
        return True

    async def _reload(self) -> None:
        """Read the whole container again, in one snapshot."""
        state = await self._runner.read(plans.load, self._sql, self._header.name)
        if state is None:
            raise PoolNotFoundError(f"{self._header.name!r} is no longer in the database")
        self._adopt(state)
