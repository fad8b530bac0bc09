"""What the command line shows of queues and pools: one summary per container, and one
container with its items, read without hooks (a hook's code need not be importable here)."""

from __future__ import annotations

from typing import Any, Final

import aiosqlite
import msgspec

from axio_context.pools.errors import PoolNotFoundError
from axio_context.transcript import format_time

from ..store.calls import run
from ..store.transactions import read_tx
from . import rows
from .rows import Header

__all__ = ["PoolInfo", "PoolItem", "PoolView", "list_pools", "show_pool"]

_ANY: Final = msgspec.msgpack.Decoder()
_LIST: Final = msgspec.json.Decoder(list[str])
_HOOKS: Final = msgspec.json.Decoder(dict[str, list[str]])
_DICT: Final = msgspec.json.Decoder(dict[str, Any])


class PoolInfo(msgspec.Struct, frozen=True):
    """One queue or pool: its kind, limit (None: unbounded), item count, the branch it came
    from, tags, hook names by event, and times."""

    name: str
    kind: str
    limit: int | None
    size: int
    parent: str | None
    tags: list[str]
    hooks: dict[str, list[str]]
    created_at: str
    updated_at: str


class PoolItem(msgspec.Struct, frozen=True, omit_defaults=True):
    """One item as stored: id, description, content decoded from MessagePack, and the item
    keys of a newer version (only when there are any)."""

    id: str | None
    description: str | None
    content: Any
    extra: dict[str, Any] | None = None


class PoolView(msgspec.Struct, frozen=True):
    """A container and its items (a queue oldest first, a pool in insertion order); ``extra``
    holds keys of a newer version's ``to_dict``, kept as they came."""

    info: PoolInfo
    items: list[PoolItem]
    extra: dict[str, Any]


def _info(c: Any, h: Header) -> PoolInfo:
    return PoolInfo(
        name=h.name,
        kind=h.kind,
        limit=h.lim,
        size=h.size,
        parent=rows.parent_name(c, h.parent),
        tags=_LIST.decode(h.tags),
        hooks=_HOOKS.decode(h.hooks),
        created_at=format_time(h.created_at),
        updated_at=format_time(h.updated_at),
    )


def _list(c: Any, kind: str | None) -> list[PoolInfo]:
    with read_tx(c):
        return [_info(c, h) for h in rows.listing(c, kind)]


def _show(c: Any, name: str, limit: int | None) -> PoolView | None:
    with read_tx(c):
        state = rows.load(c, name)
        if state is None:
            return None
        entries = state.entries if limit is None else state.entries[:limit]
        return PoolView(
            info=_info(c, state.header),
            items=[
                PoolItem(
                    e.key,
                    e.description,
                    _ANY.decode(e.content),
                    None if e.extra is None else _ANY.decode(e.extra),
                )
                for e in entries
            ],
            extra=_DICT.decode(state.header.extra),
        )


async def list_pools(conn: aiosqlite.Connection, kind: str | None = None) -> list[PoolInfo]:
    """Every queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
    if kind not in (None, "queue", "pool"):
        raise ValueError(f"kind must be 'queue' or 'pool', got {kind!r}")
    return await run(conn, _list, kind)


async def show_pool(conn: aiosqlite.Connection, name: str, *, limit: int | None = None) -> PoolView:
    """The queue or pool ``name`` with its first ``limit`` items (all when None)."""
    found = await run(conn, _show, name, limit)
    if found is None:
        raise PoolNotFoundError(f"no queue or pool named {name!r}")
    return found
