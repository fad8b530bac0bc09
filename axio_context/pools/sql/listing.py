"""What the command line shows of queues and pools: one summary per container, and one
container with its items, read without hooks (a hook's code need not be importable here).
Written once; each backend's ``list_pools``/``show_pool`` only choose the runner."""

from __future__ import annotations

from typing import Any

import msgspec

from axio_context.expiry import now_ms
from axio_context.sql import Dialect, Plan, Runner
from axio_context.transcript import format_time

from ..errors import PoolNotFoundError
from . import plans
from .chain import live_size
from .dialect import PoolSQL
from .rows import Header, decode_any, decode_hooks, decode_object, decode_tags

__all__ = ["PoolInfo", "PoolItem", "PoolView", "list_pools", "show_pool"]


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


def _info(h: Header, parent: str | None) -> PoolInfo:
    return PoolInfo(
        name=h.name,
        kind=h.kind,
        limit=h.lim,
        size=h.size,
        parent=parent,
        tags=decode_tags(h.tags),
        hooks=decode_hooks(h.hooks),
        created_at=format_time(h.created_at),
        updated_at=format_time(h.updated_at),
    )


def _list(d: Dialect, p: PoolSQL, kind: str | None, now: int) -> Plan[list[PoolInfo]]:
    out = []
    for h, parent in (yield from plans.listing(d, p, kind)):
        if h.kind == "pool":  # its items expired but not yet swept are not counted
            h = h._replace(size=(yield from live_size(h, now)))
        out.append(_info(h, parent))
    return out


def _show(d: Dialect, p: PoolSQL, name: str, limit: int | None, now: int) -> Plan[PoolView | None]:
    state = yield from plans.load(d, p, name)
    if state is None:
        return None
    live = [e for e in state.entries if e.alive(now)]  # an expired item is never shown
    h = state.header._replace(size=len(live)) if len(live) != len(state.entries) else state.header
    entries = live if limit is None else live[:limit]
    return PoolView(
        info=_info(h, (yield from plans.parent_name(d, p, h.parent))),
        items=[
            PoolItem(
                e.key, e.description, decode_any(e.content), None if e.extra is None else decode_any(e.extra)
            )
            for e in entries
        ],
        extra=decode_object(h.extra),
    )


async def list_pools(runner: Runner, sql: PoolSQL, kind: str | None = None) -> list[PoolInfo]:
    """Every queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
    if kind not in (None, "queue", "pool"):
        raise ValueError(f"kind must be 'queue' or 'pool', got {kind!r}")
    return await runner.read(_list, sql, kind, now_ms())


async def show_pool(runner: Runner, sql: PoolSQL, name: str, *, limit: int | None = None) -> PoolView:
    """The queue or pool ``name`` with its first ``limit`` items (all when None)."""
    found = await runner.read(_show, sql, name, limit, now_ms())
    if found is None:
        raise PoolNotFoundError(f"no queue or pool named {name!r}")
    return found
