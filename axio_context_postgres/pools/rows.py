"""The SQL of context queues and pools on PostgreSQL, each public function one transaction.

The model is the SQLite backend's (:mod:`axio_context_sqlite.pools.rows`): a container's entries
are an append-only log; a branch sees its parent chain's entries up to each link's ``fork_seq``;
a queue is the newest ``lim`` entries after ``base_seq``, a pool the latest entry per key ordered
by ``ord``. Every change starts with ``SELECT ... FOR UPDATE`` on the container's row, so two
writers (processes or hosts) take turns on one container; one whose copy is stale (``version``
moved) computes its change from the rows and reads back only the others' entries since its copy
(:mod:`.changes`). No update is lost. Sequence values are taken under that lock, so a branch's
``fork_seq`` (and a clear's ``base_seq``) fall between the entries before and after it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import msgspec

from axio_context.pools.errors import PoolExistsError, PoolNotFoundError
from axio_context_sqlite.pools.rows import Entry, Header, Packed, State

from ..connection import Pool, translated
from . import changes
from .changes import Fresh

__all__ = [
    "WHERE",
    "branch",
    "clear",
    "create",
    "listing",
    "load",
    "parent_name",
    "pool_add",
    "pool_remove",
    "queue_append",
    "reading",
    "version",
    "writing",
]

#: How errors name where they happened.
WHERE: Final = "PostgreSQL context pool"

_JSON: Final = msgspec.json.Encoder()
_HEADER: Final = (
    "id, name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra,"
    " size, version, created_at, updated_at"
)
# The container ($1) and its ancestors, each with the last seq it shows there (NULL: all).
_CHAIN: Final = """
WITH RECURSIVE chain (owner, up, up_cut, cut) AS (
    SELECT id, parent, fork_seq, NULL::bigint FROM context_pools WHERE id = $1
    UNION ALL
    SELECT p.id, p.parent, LEAST(c.up_cut, p.fork_seq), c.up_cut
    FROM chain c JOIN context_pools p ON p.id = c.up
)
"""
_VISIBLE: Final = (
    _CHAIN + "SELECT {columns} FROM chain c JOIN context_pool_entries e ON e.owner = c.owner"
    " WHERE e.seq > $2 AND (c.cut IS NULL OR e.seq <= c.cut)"
)
_QUEUE: Final = (
    _VISIBLE.format(columns="e.seq, e.key, e.ord, e.description, e.content, e.extra")
    + " ORDER BY e.seq DESC LIMIT $3"
)
_POOL: Final = (
    "SELECT seq, key, ord, description, content, extra FROM ("
    + _VISIBLE.format(
        columns="DISTINCT ON (e.key) e.seq, e.key, e.ord, e.removed, e.description, e.content, e.extra"
    )
    + " ORDER BY e.key, e.seq DESC) latest WHERE NOT removed ORDER BY ord"
)
_LATEST: Final = (
    _VISIBLE.format(columns="e.seq, e.ord, e.removed") + " AND e.key = $3 ORDER BY e.seq DESC LIMIT 1"
)
_INSERT: Final = (
    "INSERT INTO context_pool_entries (seq, owner, key, ord, description, content, extra)"
    " SELECT s, $1, $2, COALESCE($3, s), $4, $5, $6 FROM nextval('context_pool_seq') AS s RETURNING seq"
)
# Many entries at once, in order, each its own new key (a queue's): ord is the entry's seq.
_INSERT_MANY: Final = (
    "INSERT INTO context_pool_entries (seq, owner, key, ord, description, content, extra)"
    " SELECT s, $1, k, s, d, ct, x FROM (SELECT nextval('context_pool_seq') AS s, k, d, ct, x"
    " FROM unnest($2::text[], $3::text[], $4::bytea[], $5::bytea[]) WITH ORDINALITY AS u (k, d, ct, x, n)"
    " ORDER BY n) fresh"
)


def _columns(items: list[Packed]) -> list[list[Any]]:
    """Items as four columns (keys, descriptions, contents, extras) for ``unnest``."""
    return [[item[n] for item in items] for n in range(4)]


def _now() -> int:
    return time.time_ns() // 1_000_000


@asynccontextmanager
async def writing(pool: Pool) -> AsyncIterator[Any]:
    """A connection inside one read-write transaction, errors made into named ones."""
    async with translated(WHERE), pool.acquire() as conn, conn.transaction():
        yield conn


@asynccontextmanager
async def reading(pool: Pool) -> AsyncIterator[Any]:
    """A connection inside one read-only snapshot, errors made into named ones."""
    async with (
        translated(WHERE),
        pool.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        yield conn


async def _header(c: Any, name: str) -> Header | None:
    row = await c.fetchrow(f"SELECT {_HEADER} FROM context_pools WHERE name = $1", name)
    return None if row is None else Header(*row)


async def _lock(c: Any, cid: int) -> Header:
    """The container's row, locked until the transaction ends: writers of one container queue here."""
    row = await c.fetchrow(f"SELECT {_HEADER} FROM context_pools WHERE id = $1 FOR UPDATE", cid)
    if row is None:
        raise PoolNotFoundError(f"the queue or pool with id {cid} is no longer in the database")
    return Header(*row)


async def _entries(c: Any, h: Header) -> list[Entry]:
    if h.kind == "queue":
        rows = await c.fetch(_QUEUE, h.id, h.base_seq, h.lim)
        return [Entry(*r) for r in reversed(rows)]
    return [Entry(*r) for r in await c.fetch(_POOL, h.id, h.base_seq)]


async def _latest(c: Any, h: Header, key: str) -> tuple[int, int] | None:
    """(seq, ord) of the key's latest visible entry, or None when it is absent or removed."""
    row = await c.fetchrow(_LATEST, h.id, h.base_seq, key)
    return None if row is None or row[2] else (int(row[0]), int(row[1]))


#: Entries at or before this are seen by a branch of container $1: never deleted.
_FORKED: Final = "COALESCE((SELECT MAX(fork_seq) FROM context_pools WHERE parent = $1), -1)"


async def _bump(c: Any, cid: int, size: int) -> Header:
    row = await c.fetchrow(
        f"UPDATE context_pools SET size = $2, version = version + 1, updated_at = $3 WHERE id = $1"
        f" RETURNING {_HEADER}",
        cid,
        size,
        _now(),
    )
    return Header(*row)


async def _insert(
    c: Any, cid: int, key: str | None, ord_: int | None, desc: str | None, content: bytes, extra: bytes | None
) -> int:
    return int(await c.fetchval(_INSERT, cid, key, ord_, desc, content, extra))


async def load(pool: Pool, name: str) -> State | None:
    """The container called ``name`` and what it holds, in one snapshot."""
    async with reading(pool) as c:
        h = await _header(c, name)
        return None if h is None else State(h, await _entries(c, h))


async def parent_name(pool: Pool, pid: int | None) -> str | None:
    """The name of the container a branch came from (None: not a branch)."""
    if pid is None:
        return None
    async with translated(WHERE):
        found = await pool.fetchval("SELECT name FROM context_pools WHERE id = $1", pid)
    return None if found is None else str(found)


async def version(pool: Pool, cid: int) -> int:
    """The container's change counter (-1: gone)."""
    async with translated(WHERE):
        found = await pool.fetchval("SELECT version FROM context_pools WHERE id = $1", cid)
    return -1 if found is None else int(found)


async def create(
    pool: Pool,
    name: str,
    kind: str,
    lim: int | None,
    tags: list[str],
    hooks: dict[str, list[str]],
    extra: dict[str, Any],
    items: list[Packed],
    new: bool = False,
) -> State:
    """A new container with ``items`` written as they are (no eviction), in one transaction;
    or, unless ``new``, the existing one of that name (also when another process creates it
    at the same moment), left as it is."""
    async with writing(pool) as c:
        cid = await c.fetchval(
            "INSERT INTO context_pools (name, kind, lim, tags, hooks, extra, created_at, updated_at)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (name) DO NOTHING RETURNING id",
            name,
            kind,
            lim,
            _JSON.encode(tags).decode(),
            _JSON.encode(hooks).decode(),
            _JSON.encode(extra).decode(),
            _now(),
        )
        if cid is None:
            h = await _header(c, name)
            assert h is not None
            if new:
                raise PoolExistsError(f"a {h.kind} named {name!r} already exists")
            return State(h, await _entries(c, h))
        if kind == "queue":
            await c.execute(_INSERT_MANY, cid, *_columns(items))
            size = min(len(items), lim or len(items))
        else:
            ords: dict[str | None, int] = {}
            for key, desc, content, item_extra in items:
                seq = await _insert(c, cid, key, ords.get(key), desc, content, item_extra)
                ords.setdefault(key, seq)
            size = len(ords)
        await c.execute("UPDATE context_pools SET size = $2 WHERE id = $1", cid, size)
        h = await _lock(c, cid)
        return State(h, await _entries(c, h))


async def queue_append(
    pool: Pool, cid: int, seen: int, mark: int | None, base: int, items: list[Packed]
) -> tuple[Header, Fresh | None, int]:
    """Append ``items`` in one transaction. Returns the new header, what other writers changed
    when the caller's copy (version ``seen``, newest own seq ``mark``, ``base_seq`` ``base``)
    was stale (see :mod:`.changes`), and the seq of the last item appended."""
    async with writing(pool) as c:
        h = await _lock(c, cid)
        fresh: Fresh | None = None if h.version == seen else await changes.since(c, h, mark, base)
        seqs = [r[0] for r in await c.fetch(_INSERT_MANY + " RETURNING seq", cid, *_columns(items))]
        assert h.lim is not None
        # Own entries older than the newest `lim` are out of the window for good.
        await c.execute(
            f"DELETE FROM context_pool_entries WHERE owner = $1 AND seq > {_FORKED} AND seq < (SELECT seq"
            " FROM context_pool_entries WHERE owner = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)",
            cid,
            h.lim - 1,
        )
        bumped = await _bump(c, cid, min(h.lim, h.size + len(items)))
        if h.version != seen and fresh is None:
            fresh = State(bumped, await _entries(c, bumped))
    return bumped, fresh, max(seqs)


async def clear(pool: Pool, cid: int) -> Header:
    """Hide every entry (``base_seq`` moves past them) and delete the ones no branch sees."""
    async with writing(pool) as c:
        await _lock(c, cid)
        await c.execute("UPDATE context_pools SET base_seq = nextval('context_pool_seq') WHERE id = $1", cid)
        await c.execute(f"DELETE FROM context_pool_entries WHERE owner = $1 AND seq > {_FORKED}", cid)
        return await _bump(c, cid, 0)


async def _drop_key(c: Any, h: Header, key: str, ord_: int) -> None:
    """Hide ``key``: delete its own older entries no branch sees, and write a removal entry
    unless nothing of the key is left to hide (a root container's common case)."""
    await c.execute(
        f"DELETE FROM context_pool_entries WHERE owner = $1 AND key = $2 AND seq > {_FORKED}", h.id, key
    )
    left = await c.fetchval(
        "SELECT 1 FROM context_pool_entries WHERE owner = $1 AND key = $2 LIMIT 1", h.id, key
    )
    if h.parent is not None or left is not None:
        await c.execute(
            "INSERT INTO context_pool_entries (owner, key, ord, removed, content)"
            " VALUES ($1, $2, $3, true, '')",
            h.id,
            key,
            ord_,
        )


async def pool_add(
    pool: Pool,
    cid: int,
    seen: tuple[int, int | None, int],
    item: Packed,
    oldest: str | None,
    vector: tuple[str, Sequence[float]] | None,
) -> tuple[Header, Fresh | None, str | None, int, int]:
    """Add or replace the item's key in one transaction, evicting the oldest key of a full
    pool first (``oldest`` is the caller's view, recomputed when stale). ``seen``: the caller's
    (version, mark, base_seq) (see :mod:`.changes`). Returns (the new header, what other
    writers changed when the caller's copy was stale, the evicted key, the new entry's seq and
    ord: the seq when the key is new)."""
    seen_version, mark, base = seen
    key, desc, content, extra = item
    assert key is not None
    async with writing(pool) as c:
        h = await _lock(c, cid)
        stale = h.version != seen_version
        fresh: Fresh | None = await changes.since(c, h, mark, base) if stale else None
        found = await _latest(c, h, key)
        size, evicted = h.size, None
        full = found is None and h.lim is not None and size >= h.lim
        if full and stale:  # the caller's oldest may be gone: ask the pool
            oldest = await c.fetchval(_POOL.replace("seq, key,", "key,", 1) + " LIMIT 1", h.id, h.base_seq)
        if full and oldest is not None:
            old = await _latest(c, h, oldest)
            if old is not None:
                await _drop_key(c, h, oldest, old[1])
                size, evicted = size - 1, oldest
        seq = await _insert(c, cid, key, None if found is None else found[1], desc, content, extra)
        await c.execute(
            f"DELETE FROM context_pool_entries WHERE owner = $1 AND key = $2"
            f" AND seq > {_FORKED} AND seq < $3",
            cid,
            key,
            seq,
        )
        if vector is not None:
            await c.execute(
                "INSERT INTO context_pool_vectors (seq, model, embedding) VALUES ($1, $2, $3)",
                seq,
                vector[0],
                list(vector[1]),
            )
        bumped = await _bump(c, cid, size + (found is None))
        if stale and fresh is None:
            fresh = State(bumped, await _entries(c, bumped))
    return bumped, fresh, evicted, seq, seq if found is None else found[1]


async def pool_remove(pool: Pool, cid: int, key: str) -> Header | None:
    """Remove ``key`` in one transaction; None when it is not there."""
    async with writing(pool) as c:
        h = await _lock(c, cid)
        found = await _latest(c, h, key)
        if found is None:
            return None
        await _drop_key(c, h, key, found[1])
        return await _bump(c, cid, h.size - 1)


async def _free_name(c: Any, base: str) -> str:
    """``base/1``, ``base/2``, ...: the first name not taken (the default name of a branch)."""
    prefix = f"{base}/"
    taken = {
        r[0][len(prefix) :]
        for r in await c.fetch("SELECT name FROM context_pools WHERE starts_with(name, $1)", prefix)
    }
    n = 1
    while str(n) in taken:
        n += 1
    return f"{prefix}{n}"


async def branch(
    pool: Pool,
    cid: int,
    name: str | None,
    lim: int | None,
    hooks: dict[str, list[str]] | None,
    seen: int,
    drop: list[str],
) -> tuple[Header, list[Entry] | None]:
    """A new container seeing this one's entries so far: one row, no entry copied (a pool
    branched with a smaller limit also writes one removal entry per item it drops: ``drop``,
    recomputed when the caller's ``seen`` version is stale). Returns the new header, and the
    child's entries only when the caller's view was stale."""
    async with writing(pool) as c:
        p = await _lock(c, cid)  # the parent changes after the branch's cut, never across it
        if name is None:
            name = await _free_name(c, p.name)
        now = _now()
        row = await c.fetchrow(
            "INSERT INTO context_pools (name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra,"
            " size, created_at, updated_at) VALUES ($1, $2, $3, nextval('context_pool_seq'), $4, $5, $6,"
            " $7, $8, $9, $10, $10) ON CONFLICT (name) DO NOTHING RETURNING " + _HEADER,
            name,
            p.kind,
            cid,
            p.base_seq,
            lim,
            p.tags,
            p.hooks if hooks is None else _JSON.encode(hooks).decode(),
            p.extra,
            p.size if lim is None else min(p.size, lim),
            now,
        )
        if row is None:
            raise PoolExistsError(f"a queue or pool named {name!r} already exists")
        h = Header(*row)
        if p.kind == "pool" and lim is not None and p.size > lim:
            if p.version != seen:
                drop = [str(e.key) for e in (await _entries(c, h))[: p.size - lim]]
            for key in drop:
                await _drop_key(c, h, key, 0)
        return h, (None if p.version == seen else await _entries(c, h))


async def listing(pool: Pool, kind: str | None) -> list[tuple[Header, str | None]]:
    """Every container (or only one ``kind``) by name, each with its parent's name."""
    async with reading(pool) as c:
        rows = await c.fetch(
            f"SELECT {', '.join('p.' + col.strip() for col in _HEADER.split(','))}, parent.name"
            " FROM context_pools p LEFT JOIN context_pools parent ON parent.id = p.parent"
            " WHERE $1::text IS NULL OR p.kind = $1 ORDER BY p.name",
            kind,
        )
        return [(Header(*r[:-1]), r[-1]) for r in rows]
