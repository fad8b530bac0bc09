"""What the PostgreSQL queue and pool share: the pool of connections, the container's header,
the codec of item content, the process's copy of what the container holds, opening by name."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from axio_context.pools.errors import PoolConfigError, PoolKindError, PoolNotFoundError
from axio_context.pools.hooks import Hook, rebuild_hooks
from axio_context.pools.items import ContextItem
from axio_context_sqlite.pools.rows import Entry, Header, State

from ..connection import Pool
from . import rows

__all__ = ["Stored", "open_state"]

_JSON_LIST: Final = msgspec.json.Decoder(list[str])
_JSON_HOOKS: Final = msgspec.json.Decoder(dict[str, list[str]])
_JSON_DICT: Final = msgspec.json.Decoder(dict[str, Any])
_EXTRA: Final = msgspec.msgpack.Decoder(dict[str, Any])


async def open_state(
    pool: Pool,
    name: str,
    kind: str,
    limit: int | None,
    tags: frozenset[str] | None,
    *,
    create: bool = True,
) -> State:
    """The container ``name`` (created empty when missing and ``create``), checked to be a
    ``kind`` with this limit and these tags when they are given (the SQLite errors, word for word)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a {kind} needs a non-empty name, got {name!r}")
    state = await rows.load(pool, name)
    if state is None:
        if not create:
            raise PoolNotFoundError(f"no queue or pool named {name!r}")
        if kind == "queue" and limit is None:
            raise ValueError(f"queue {name!r} does not exist yet: creating it needs a limit")
        state = await rows.create(pool, name, kind, limit, sorted(tags or ()), {}, {}, [])
    h = state.header
    if h.kind != kind:
        raise PoolKindError(f"{name!r} is a {h.kind}, not a {kind}")
    if limit is not None and h.lim != limit:
        raise PoolConfigError(f"{kind} {name!r} has limit {h.lim}, opened with limit {limit}")
    if tags is not None and frozenset(_JSON_LIST.decode(h.tags)) != tags:
        raise PoolConfigError(
            f"{kind} {name!r} has tags {sorted(_JSON_LIST.decode(h.tags))}, opened with {sorted(tags)}"
        )
    return state


class Stored:
    """The state a PostgreSQL container keeps in the process."""

    hooks: list[Hook]
    tags: frozenset[str]
    extra: dict[str, Any]

    def _setup(self, pool: Pool, state: State, content_type: Any) -> None:
        self._pool = pool
        self._content_type = content_type
        self._decoder: msgspec.msgpack.Decoder[Any] = msgspec.msgpack.Decoder(content_type)
        self._header = state.header
        self.tags = frozenset(_JSON_LIST.decode(state.header.tags))
        self.extra = _JSON_DICT.decode(state.header.extra)
        self.hooks = rebuild_hooks(_JSON_HOOKS.decode(state.header.hooks))
        self._shared = False
        self._mark: int | None = None  # the newest own entry the copy reflects (None: unknown)
        self._load(state.entries)

    def _child_of(self, parent: Stored, h: Header) -> None:
        """Share the parent's connections and codec, take the new header (a branch)."""
        self._pool, self._content_type, self._decoder = parent._pool, parent._content_type, parent._decoder
        self._header, self.tags, self.extra = h, parent.tags, dict(parent.extra)
        self._mark = None

    def _load(self, entries: list[Entry]) -> None:
        raise NotImplementedError

    def _item(self, e: Entry) -> ContextItem[Any]:
        extra = None if e.extra is None else _EXTRA.decode(e.extra)
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
    def _seen(self) -> tuple[int, int | None, int]:
        """What a write tells the database of this copy: version, mark, ``base_seq``."""
        return self._header.version, self._mark, self._header.base_seq

    @property
    def name(self) -> str:
        """The container's name in the database."""
        return self._header.name

    @property
    def pool(self) -> Pool:
        """The connection pool it works on (the caller's, who closes it)."""
        return self._pool

    async def refresh(self) -> bool:
        """Reload when another process or connection changed the container; True if it did."""
        if await rows.version(self._pool, self._header.id) == self._header.version:
            return False
        await self._reload()
        return True

    async def _reload(self) -> None:
        """Read the whole container again, in one snapshot."""
        state = await rows.load(self._pool, self._header.name)
        if state is None:
            raise PoolNotFoundError(f"{self._header.name!r} is no longer in the database")
        self._adopt(state)
