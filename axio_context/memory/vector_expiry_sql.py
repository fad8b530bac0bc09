"""Vector documents' expiry, written once over a backend's vector statements (see
:mod:`axio_context.expiry`): a document's TTL is set in the transaction that writes it; a read
leaves out what has expired. A search asks the backend for as many more hits as the collection
holds expired documents not yet swept, and drops those, so it still returns ``limit`` live hits
(a sweep keeps that extra small); with none expired it costs one count on the expiry index."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from axio_context.expiry import expires_at
from axio_context.sql import Dialect, Execute, Plan, Rows, Value
from axio_context.sql.expiry import count_due, live

from .vectors import CollectionInfo, Document, SearchResult

__all__ = [
    "DOCS",
    "collections_live",
    "count",
    "get_live",
    "refresh_docs",
    "search_live",
    "sweep",
    "write_with_ttl",
]

#: The table of documents, where each document's TTL is kept.
DOCS: Final = "memory_documents"
#: The largest row count a query is asked for (SQL's LIMIT is a signed 64-bit number).
_MOST: Final = 2**63 - 1


def _collection(d: Dialect, name: str) -> Plan[int | None]:
    found = yield Value("SELECT id FROM memory_collections WHERE name = ?", (name,))
    return None if found is None else int(found)


def _expired(d: Dialect, cid: int, ids: list[str] | None, now: int) -> Plan[set[str]]:
    """The expired documents of collection ``cid`` (among ``ids`` when given)."""
    sql = f"SELECT id FROM {DOCS} WHERE collection = ? AND expires_at <= ?"
    args: tuple[Any, ...] = (cid, now)
    if ids is not None:
        sql += f" AND {d.any_of('id')}"
        args += (d.list_arg(ids),)
    return {str(r[0]) for r in (yield Rows(sql, args))}


def write_with_ttl(
    d: Dialect,
    write: Callable[..., Plan[None]],
    delete: Callable[[Dialect, str, list[str]], Plan[int]],
    name: str,
    args: tuple[Any, ...],
    ids: list[str],
    replace: bool,
    ttl_ms: int | None,
    now: int,
) -> Plan[None]:
    """``write(d, name, *args)`` with expired documents among ``ids`` deleted first (to a reader
    they are absent, so ``add`` writes them anew), then the TTL of what was written set."""
    cid = yield from _collection(d, name)
    fresh = ids
    if cid is not None:
        stale = yield from _expired(d, cid, ids, now)
        if stale:
            yield from delete(d, name, sorted(stale))
        if not replace and ttl_ms is not None:
            present = yield Rows(
                f"SELECT id FROM {DOCS} WHERE collection = ? AND {d.any_of('id')}", (cid, d.list_arg(ids))
            )
            have = {str(r[0]) for r in present}
            fresh = [i for i in ids if i not in have]
    yield from write(d, name, *args)
    if ttl_ms is None and (cid is None or not replace):
        return  # new rows never expire unless told; add leaves present rows as they are
    cid = yield from _collection(d, name)
    yield Execute(
        f"UPDATE {DOCS} SET ttl_ms = ?, expires_at = ? WHERE collection = ? AND {d.any_of('id')}",
        (ttl_ms, expires_at(ttl_ms, now), cid, d.list_arg(fresh)),
    )


def get_live(
    d: Dialect,
    get: Callable[[Dialect, str, list[str]], Plan[list[Document]]],
    name: str,
    ids: list[str],
    now: int,
) -> Plan[list[Document]]:
    """``get(d, name, ids)`` without the expired documents."""
    docs = yield from get(d, name, ids)
    cid = yield from _collection(d, name)
    if not docs or cid is None:
        return docs
    stale = yield from _expired(d, cid, [doc.id for doc in docs], now)
    return [doc for doc in docs if doc.id not in stale]


def search_live(
    d: Dialect, search: Callable[[Dialect, Any], Plan[list[SearchResult]]], q: Any, now: int
) -> Plan[list[SearchResult]]:
    """``search(d, q)``'s ``q.limit`` best live hits (asking for more while expired ones wait)."""
    cid = yield from _collection(d, q.collection)
    stale = set() if cid is None else (yield from _expired(d, cid, None, now))
    if not stale:
        return (yield from search(d, q))
    hits = yield from search(d, q._replace(limit=min(q.limit + len(stale), _MOST)))
    return [h for h in hits if h.id not in stale][: q.limit]


def collections_live(
    d: Dialect, collections: Callable[[Dialect], Plan[list[CollectionInfo]]], now: int
) -> Plan[list[CollectionInfo]]:
    """``collections(d)`` with each count leaving out the expired documents not yet swept."""
    found = yield from collections(d)
    if not found:
        return found
    rows = yield Rows(
        f"SELECT c.name, count(*) FROM {DOCS} d JOIN memory_collections c ON c.id = d.collection"
        " WHERE d.expires_at <= ? GROUP BY c.name",
        (now,),
    )
    due = {str(name): int(n) for name, n in rows}
    return [msgspec.structs.replace(c, documents=c.documents - due.get(c.name, 0)) for c in found]


def refresh_docs(d: Dialect, name: str, ids: list[str], now: int) -> Plan[None]:
    """Restart the TTL of the live documents among ``ids`` that have one."""
    cid = yield from _collection(d, name)
    if cid is not None and ids:
        yield Execute(
            f"UPDATE {DOCS} SET expires_at = ? + ttl_ms WHERE collection = ? AND ttl_ms IS NOT NULL"
            f" AND {live()} AND {d.any_of('id')}",
            (now, cid, now, d.list_arg(ids)),
        )


def count(d: Dialect, now: int) -> Plan[int]:
    """How many documents have expired (none before the first collection made the table)."""
    if (yield Value("SELECT 1 FROM memory_collections LIMIT 1")) is None:
        return 0
    return (yield from count_due(d, DOCS, now))


def sweep(
    d: Dialect, delete: Callable[[Dialect, str, list[str]], Plan[int]], now: int, limit: int
) -> Plan[int]:
    """Delete at most ``limit`` expired documents through the backend's ``delete`` (so its
    embeddings and search copies follow), a collection at a time; how many went."""
    if (yield Value("SELECT 1 FROM memory_collections LIMIT 1")) is None:
        return 0
    rows = yield Rows(
        f"SELECT c.name, d.id FROM {DOCS} d JOIN memory_collections c ON c.id = d.collection"
        " WHERE d.expires_at <= ? LIMIT ?",
        (now, limit),
    )
    by_name: dict[str, list[str]] = {}
    for name, doc in rows:
        by_name.setdefault(str(name), []).append(str(doc))
    gone = 0
    for name, ids in sorted(by_name.items()):
        gone += yield from delete(d, name, sorted(ids))
    return gone
