"""What the command line shows of queues and pools on PostgreSQL: the SQLite version's
:class:`PoolInfo` and :class:`PoolView`, read without hooks (a hook's code need not be
importable where the command runs)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from axio_context.pools.errors import PoolNotFoundError
from axio_context.transcript import format_time
from axio_context_sqlite.pools.listing import PoolInfo, PoolItem, PoolView
from axio_context_sqlite.pools.rows import Header

from ..connection import Pool
from . import rows

__all__ = ["list_pools", "show_pool"]

_ANY: Final = msgspec.msgpack.Decoder()
_LIST: Final = msgspec.json.Decoder(list[str])
_HOOKS: Final = msgspec.json.Decoder(dict[str, list[str]])
_DICT: Final = msgspec.json.Decoder(dict[str, Any])


def _info(h: Header, parent: str | None) -> PoolInfo:
    return PoolInfo(
        name=h.name,
        kind=h.kind,
        limit=h.lim,
        size=h.size,
        parent=parent,
        tags=_LIST.decode(h.tags),
        hooks=_HOOKS.decode(h.hooks),
        created_at=format_time(h.created_at),
        updated_at=format_time(h.updated_at),
    )


async def list_pools(pool: Pool, kind: str | None = None) -> list[PoolInfo]:
    """Every queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
    if kind not in (None, "queue", "pool"):
        raise ValueError(f"kind must be 'queue' or 'pool', got {kind!r}")
    return [_info(h, parent) for h, parent in await rows.listing(pool, kind)]


async def show_pool(pool: Pool, name: str, *, limit: int | None = None) -> PoolView:
    """The queue or pool ``name`` with its first ``limit`` items (all when None)."""
    state = await rows.load(pool, name)
    if state is None:
        raise PoolNotFoundError(f"no queue or pool named {name!r}")
    h = state.header
    entries = state.entries if limit is None else state.entries[:limit]
    return PoolView(
        info=_info(h, await rows.parent_name(pool, h.parent)),
        items=[
            PoolItem(
                e.key,
                e.description,
                _ANY.decode(e.content),
                None if e.extra is None else _ANY.decode(e.extra),
            )
            for e in entries
        ],
        extra=_DICT.decode(h.extra),
    )
