"""What ``copy`` carries of the memory items' TTLs (see :mod:`axio_context.expiry`): the layers'
dumps hold no TTL, so after they are copied, each live item that has one gets the same TTL and
expiry time in the destination (an expired item was not copied at all). Written once as plans
over the tables' ``ttl_ms`` and ``expires_at`` columns; sessions' TTLs travel through
:class:`axio_context.catalog.expiry_sql.SessionExpiry`."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from ..expiry import now_ms
from ..sql import Dialect, ExecuteMany, Plan, Rows, Runner, Value

__all__ = ["ItemTTLs", "carry_item_ttls", "item_ttls", "restore_item_ttls"]

#: Per layer: the SELECT of (key..., ttl_ms, expires_at) of live items with a TTL (bind now), and
#: the UPDATE giving one item its TTL (bind ttl_ms, expires_at, key...) unless it has its own.
_ITEMS: Final = {
    "blobs": (
        "SELECT key, ttl_ms, expires_at FROM memory_blob_keys WHERE expires_at > ?",
        "UPDATE memory_blob_keys SET ttl_ms = ?, expires_at = ? WHERE key = ? AND expires_at IS NULL",
    ),
    "task_lists": (
        "SELECT id, ttl_ms, expires_at FROM task_lists WHERE expires_at > ?",
        "UPDATE task_lists SET ttl_ms = ?, expires_at = ? WHERE id = ? AND expires_at IS NULL",
    ),
    "documents": (
        "SELECT c.name, d.id, d.ttl_ms, d.expires_at FROM memory_documents d"
        " JOIN memory_collections c ON c.id = d.collection WHERE d.expires_at > ?",
        "UPDATE memory_documents SET ttl_ms = ?, expires_at = ? WHERE id = ?"
        " AND collection = (SELECT id FROM memory_collections WHERE name = ?) AND expires_at IS NULL",
    ),
}


class ItemTTLs(msgspec.Struct, frozen=True):
    """Per layer, its live items that have a TTL: ``(key..., ttl_ms, expires_at)``."""

    layers: dict[str, list[tuple[Any, ...]]]


def _read(d: Dialect, layer: str, now: int) -> Plan[list[tuple[Any, ...]]]:
    if layer == "documents" and (yield Value("SELECT 1 FROM memory_collections LIMIT 1")) is None:
        return []  # no collection yet: PostgreSQL has not made the documents' table
    return [tuple(r) for r in (yield Rows(_ITEMS[layer][0], (now,)))]


def _restore(d: Dialect, layer: str, rows: list[tuple[Any, ...]]) -> Plan[None]:
    # (key..., ttl, expires) -> (ttl, expires, id[, collection]): a document's key is (collection, id)
    yield ExecuteMany(_ITEMS[layer][1], [(r[-2], r[-1], *reversed(r[:-2])) for r in rows])


async def item_ttls(runner: Runner) -> ItemTTLs:
    """Every live memory item with a TTL, by layer. A database with no vector collection has no
    documents (PostgreSQL makes their table with the first one): any other failure is raised."""
    now = now_ms()
    return ItemTTLs({layer: await runner.read(_read, layer, now) for layer in _ITEMS})


async def restore_item_ttls(runner: Runner, ttls: ItemTTLs) -> None:
    """Give the items ``ttls`` names their TTL and expiry time (one transaction per layer)."""
    for layer, rows in ttls.layers.items():
        if rows:
            await runner.write(_restore, layer, rows)


async def carry_item_ttls(src: Runner, dst: Runner) -> None:
    """After a copy: the destination's copies of ``src``'s live items with a TTL get it."""
    await restore_item_ttls(dst, await item_ttls(src))
