"""The operations of persisted queues and pools, written once as plans (see :mod:`axio_context.sql`).

A container's entries are an append-only log (``context_pool_entries``; a ``seq`` is never
reused); what a container holds is computed from its own entries and, for a branch, its parent
chain's entries up to each link's ``fork_seq``: a queue is the newest ``lim`` entries after
``base_seq``, a pool the latest entry per key (a ``removed`` entry hides the key), ordered by
``ord`` (the seq of a key's first entry, kept when it is replaced). So a branch is one row and
no copy. Every change is one transaction that starts by reading (and, where the backend locks
rows, locking) the container's row: writers of one container take turns, and one whose copy is
stale (``version`` moved) computes its change from the rows and reads back only what the others
wrote since its copy (:mod:`.changes`). Entries no branch can see any more are deleted as they
are superseded. Each plan takes the runner's :class:`~axio_context.sql.Dialect` and the
backend's :class:`~.dialect.PoolSQL`.
"""

from __future__ import annotations

import time
from typing import Any, Final

from axio_context.sql import Dialect, Execute, Plan, Row, Rows, Value

from ..errors import PoolExistsError, PoolNotFoundError
from . import changes
from .chain import CHAIN, FORKED, VISIBLE, latest_row, live_size
from .changes import Fresh, Seen
from .dialect import PoolSQL, insert_entry
from .rows import HEADER, Entry, Header, Packed, State, encode_json

__all__ = [
    "branch",
    "chain_owners",
    "clear",
    "create",
    "entries",
    "listing",
    "load",
    "parent_name",
    "pool_add",
    "pool_remove",
    "queue_append",
    "version",
]

_QUEUE: Final = (
    CHAIN
    + "SELECT e.seq, e.key, e.ord, e.description, e.content, e.extra"
    + VISIBLE
    + " ORDER BY e.seq DESC LIMIT ?"
)
# The oldest visible key of a pool (its latest entry per key, by ord) not expired (bind now).
_OLDEST: Final = (
    CHAIN + "SELECT key FROM (SELECT e.key, e.ord, e.removed, e.expires_at,"
    " ROW_NUMBER() OVER (PARTITION BY e.key ORDER BY e.seq DESC) AS n" + VISIBLE + ") latest"
    " WHERE n = 1 AND NOT removed AND (expires_at IS NULL OR expires_at > ?) ORDER BY ord LIMIT 1"
)
# Every visible entry of a pool in log order: the latest per key is kept in Python (faster than
# the window above on SQLite: 9 ms against 16 for 2,000 items).
_POOL: Final = (
    CHAIN
    + "SELECT e.seq, e.key, e.ord, e.removed, e.description, e.content, e.extra, e.expires_at"
    + VISIBLE
    + " ORDER BY e.seq"
)
#: ``p.``-prefixed header columns, for joins.
_PREFIXED: Final = ", ".join("p." + column for column in HEADER.split(", "))


def _now() -> int:
    return time.time_ns() // 1_000_000


def _lock(d: Dialect, cid: int) -> Plan[Header]:
    """The container's row, locked until the transaction ends where the backend locks rows."""
    row = yield Row(f"SELECT {HEADER} FROM context_pools WHERE id = ?{d.lock_rows}", (cid,))
    if row is None:
        raise PoolNotFoundError(f"the queue or pool with id {cid} is no longer in the database")
    return Header(*row)


def chain_owners(cid: int) -> Plan[list[int]]:
    """The container and its ancestors: every owner whose entries it may show."""
    return [int(r[0]) for r in (yield Rows(CHAIN + "SELECT owner FROM chain", (cid,)))]


def entries(d: Dialect, h: Header) -> Plan[list[Entry]]:
    """What the container shows: a queue oldest first, a pool by ``ord`` (with its expired
    items not yet swept: :meth:`Entry.alive` tells them apart)."""
    if h.kind == "queue":
        rows = yield Rows(_QUEUE, (h.id, h.base_seq, h.lim))
        return [Entry(*r) for r in reversed(rows)]
    live: dict[str, Entry] = {}
    for seq, key, ord_, removed, desc, content, extra, exp in (yield Rows(_POOL, (h.id, h.base_seq))):
        if removed:
            live.pop(key, None)
        else:
            live[key] = Entry(seq, key, ord_, desc, content, extra, None if exp is None else int(exp))
    return sorted(live.values(), key=lambda e: e.ord)


def _latest(h: Header, key: str, now: int) -> Plan[tuple[int, int] | None]:
    """(seq, ord) of the key's latest visible entry, or None when it is absent, removed or
    expired at ``now`` (an expired latest entry removes its key: what it replaced stays hidden)."""
    row = yield from latest_row(h, key)
    if row is None or row[2] or (row[3] is not None and row[3] <= now):
        return None
    return row[0], row[1]


def _bump(cid: int, size: int) -> Plan[Header]:
    row = yield Row(
        "UPDATE context_pools SET size = ?, version = version + 1, updated_at = ?"
        f" WHERE id = ? RETURNING {HEADER}",
        (size, _now(), cid),
    )
    return Header(*row)


def _insert(
    p: PoolSQL, cid: int, key: str | None, ord_: int | None, item: Packed, ttl: tuple[int, int] | None = None
) -> Plan[int]:
    """A new entry (``ttl``: its TTL and expiry time in ms; None: it never expires)."""
    desc, content, extra = (p.sealed(v) for v in item[1:])  # what a user wrote (see PoolSQL.sealed)
    if ttl is None:
        return int((yield Rows(insert_entry(p.new_seq), (cid, key, ord_, desc, content, extra)))[0][0])
    args = (cid, key, ord_, desc, content, extra, *ttl)
    return int((yield Rows(insert_entry(p.new_seq, expiring=True), args))[0][0])


def load(d: Dialect, p: PoolSQL, name: str) -> Plan[State | None]:
    """The container called ``name`` and what it holds."""
    row = yield Row(f"SELECT {HEADER} FROM context_pools WHERE name = ?", (name,))
    if row is None:
        return None
    h = Header(*row)
    return State(h, (yield from entries(d, h)))


def version(d: Dialect, p: PoolSQL, cid: int) -> Plan[int]:
    """The container's change counter (-1: gone)."""
    found = yield Value("SELECT version FROM context_pools WHERE id = ?", (cid,))
    return -1 if found is None else int(found)


def parent_name(d: Dialect, p: PoolSQL, pid: int | None) -> Plan[str | None]:
    """The name of the container a branch came from (None: not a branch)."""
    if pid is None:
        return None
    found = yield Value("SELECT name FROM context_pools WHERE id = ?", (pid,))
    return None if found is None else str(found)


def create(
    d: Dialect,
    p: PoolSQL,
    name: str,
    kind: str,
    lim: int | None,
    tags: list[str],
    hooks: dict[str, list[str]],
    extra: dict[str, Any],
    items: list[Packed],
    new: bool = False,
    ttl_ms: int | None = None,
    now: int = 0,
) -> Plan[State]:
    """A new container with ``items`` written as they are (no eviction); or, unless ``new``,
    the existing one of that name (also when another writer creates it at the same moment)."""
    now = _now()
    cid = yield Value(
        "INSERT INTO context_pools (name, kind, lim, tags, hooks, extra, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING id",
        (name, kind, lim, encode_json(tags), encode_json(hooks), encode_json(extra), now, now),
    )
    if cid is None:
        state = yield from load(d, p, name)
        assert state is not None
        if new:
            raise PoolExistsError(f"a {state.header.kind} named {name!r} already exists")
        return state
    if kind == "queue":
        yield from p.insert_entries(d, cid, items)
        size = min(len(items), lim or len(items))
    else:
        ords: dict[str | None, int] = {}
        for item in items:
            ttl = None if ttl_ms is None else (ttl_ms, now + ttl_ms)  # a pool's default TTL
            seq = yield from _insert(p, cid, item[0], ords.get(item[0]), item, ttl)
            ords.setdefault(item[0], seq)
        size = len(ords)
    h = Header(
        *(yield Row(f"UPDATE context_pools SET size = ? WHERE id = ? RETURNING {HEADER}", (size, cid)))
    )
    return State(h, (yield from entries(d, h)))


def queue_append(
    d: Dialect, p: PoolSQL, cid: int, seen: Seen, items: list[Packed]
) -> Plan[tuple[Header, Fresh | None, int]]:
    """Append ``items``. Returns the new header, what other writers changed when the caller's
    copy (``seen``) was stale (see :mod:`.changes`), and the seq of the last item appended."""
    h = yield from _lock(d, cid)
    stale = h.version != seen[0]
    fresh: Fresh | None = (yield from changes.since(h, seen)) if stale else None
    seqs = yield from p.insert_entries(d, cid, items)
    assert h.lim is not None
    # Own entries older than the newest `lim` are out of the window for good.
    yield Execute(
        f"DELETE FROM context_pool_entries WHERE owner = ? AND seq > {FORKED} AND seq < (SELECT seq"
        " FROM context_pool_entries WHERE owner = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
        (cid, cid, cid, h.lim - 1),
    )
    bumped = yield from _bump(cid, min(h.lim, h.size + len(items)))
    if stale and fresh is None:
        fresh = State(bumped, (yield from entries(d, bumped)))
    return bumped, fresh, max(seqs)


def clear(d: Dialect, p: PoolSQL, cid: int) -> Plan[Header]:
    """Hide every entry (``base_seq`` moves past them) and delete the ones no branch sees."""
    yield from _lock(d, cid)
    yield Execute(f"UPDATE context_pools SET base_seq = {p.log_top} WHERE id = ?", (cid,))
    yield Execute(f"DELETE FROM context_pool_entries WHERE owner = ? AND seq > {FORKED}", (cid, cid))
    return (yield from _bump(cid, 0))


def _drop_key(p: PoolSQL, h: Header, key: str, ord_: int) -> Plan[None]:
    """Hide ``key``: delete its own older entries no branch sees, and write a removal entry
    unless nothing of the key is left to hide (a root container's common case)."""
    yield Execute(
        f"DELETE FROM context_pool_entries WHERE owner = ? AND key = ? AND seq > {FORKED}", (h.id, key, h.id)
    )
    if h.parent is None:
        left = yield Value(
            "SELECT 1 FROM context_pool_entries WHERE owner = ? AND key = ? LIMIT 1", (h.id, key)
        )
        if left is None:
            return
    yield Execute(
        "INSERT INTO context_pool_entries (seq, owner, key, ord, removed, content)"
        f" SELECT s, ?, ?, ?, ?, ? FROM (SELECT {p.new_seq} AS s) n",
        (h.id, key, ord_, True, b""),
    )


def pool_add(
    d: Dialect,
    p: PoolSQL,
    cid: int,
    seen: Seen,
    item: Packed,
    oldest: str | None,
    vector: tuple[str, bytes] | None,
    ttl_ms: int | None = None,
    now: int = 0,
) -> Plan[tuple[Header, Fresh | None, str | None, int, int]]:
    """Add or replace the item's key (with a TTL of ``ttl_ms`` from ``now`` when given),
    evicting the oldest key of a full pool first (``oldest`` is the caller's view, asked again
    when its copy is stale). Returns (the new header, what other writers changed when the copy
    was stale, the evicted key, the new entry's seq and ord: the seq when the key is new or
    its latest entry has expired)."""
    key = item[0]
    assert key is not None
    h = yield from _lock(d, cid)
    stale = h.version != seen[0]
    fresh: Fresh | None = (yield from changes.since(h, seen)) if stale else None
    row = yield from latest_row(h, key)
    counted = row is not None and not row[2]  # in ``size``, expired or not
    found = row[:2] if counted and row is not None and (row[3] is None or row[3] > now) else None
    size, evicted = h.size, None
    full = found is None and h.lim is not None and size >= h.lim
    if full:
        assert h.lim is not None
        full = (yield from live_size(h, now)) >= h.lim
    if full and stale:  # the caller's oldest may be gone: ask the pool
        oldest = yield Value(_OLDEST, (h.id, h.base_seq, now))
    if full and oldest is not None:
        old = yield from _latest(h, oldest, now)
        if old is not None:
            yield from _drop_key(p, h, oldest, old[1])
            size, evicted = size - 1, oldest
    ttl = None if ttl_ms is None else (ttl_ms, now + ttl_ms)
    seq = yield from _insert(p, cid, key, None if found is None else found[1], item, ttl)
    yield Execute(
        f"DELETE FROM context_pool_entries WHERE owner = ? AND key = ? AND seq > {FORKED} AND seq < ?",
        (cid, key, cid, seq),
    )
    if vector is not None:
        yield Execute(
            f"INSERT INTO context_pool_vectors (seq, model, embedding) VALUES (?, ?, {p.vector_placeholder})",
            (seq, vector[0], p.vector_param(vector[1])),
        )
    bumped = yield from _bump(cid, size + (not counted))
    if stale and fresh is None:
        fresh = State(bumped, (yield from entries(d, bumped)))
    return bumped, fresh, evicted, seq, seq if found is None else found[1]


def pool_remove(d: Dialect, p: PoolSQL, cid: int, key: str, now: int = 0) -> Plan[Header | None]:
    """Remove ``key``; None when it is not there (or has expired at ``now``)."""
    h = yield from _lock(d, cid)
    found = yield from _latest(h, key, now)
    if found is None:
        return None
    yield from _drop_key(p, h, key, found[1])
    return (yield from _bump(cid, h.size - 1))


def _free_name(base: str) -> Plan[str]:
    """``base/1``, ``base/2``, ...: the first name not taken (the default name of a branch)."""
    prefix = f"{base}/"
    taken = {
        str(r[0])[len(prefix) :]
        for r in (
            yield Rows("SELECT name FROM context_pools WHERE substr(name, 1, ?) = ?", (len(prefix), prefix))
        )
    }
    n = 1
    while str(n) in taken:
        n += 1
    return f"{prefix}{n}"


def branch(
    d: Dialect,
    p: PoolSQL,
    cid: int,
    name: str | None,
    lim: int | None,
    hooks: dict[str, list[str]] | None,
    seen: int,
    drop: list[str],
    now: int = 0,
) -> Plan[tuple[Header, list[Entry] | None]]:
    """A new container seeing this one's entries so far: one row, no entry copied (a pool
    branched with a smaller limit also writes one removal entry per item it drops: ``drop``,
    the oldest items live at ``now``, asked again when the caller's ``seen`` version is stale).
    Returns the new header, and the child's entries only when the caller's view was stale."""
    parent = yield from _lock(d, cid)  # the parent changes after the branch's cut, never across it
    if parent.kind != "pool" or lim is None:
        drop = []
    elif parent.version != seen:  # the caller's view of what to drop is stale: ask the pool
        shown = [e for e in (yield from entries(d, parent)) if e.alive(now)] if parent.size > lim else []
        drop = [str(e.key) for e in shown[: max(0, len(shown) - lim)]]
    if name is None:
        name = yield from _free_name(parent.name)
    made = _now()
    if parent.kind == "queue":
        size = parent.size if lim is None else min(parent.size, lim)
    else:
        size = parent.size - len(drop)
    row = yield Row(
        "INSERT INTO context_pools (name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra, size,"
        f" created_at, updated_at) VALUES (?, ?, ?, {p.log_top}, ?, ?, ?, ?, ?, ?, ?, ?)"
        f" ON CONFLICT (name) DO NOTHING RETURNING {HEADER}",
        (
            name,
            parent.kind,
            cid,
            parent.base_seq,
            lim,
            parent.tags,
            parent.hooks if hooks is None else encode_json(hooks),
            parent.extra,
            size,
            made,
            made,
        ),
    )
    if row is None:
        raise PoolExistsError(f"a queue or pool named {name!r} already exists")
    h = Header(*row)
    for key in drop:
        yield from _drop_key(p, h, key, 0)
    return h, (None if parent.version == seen else (yield from entries(d, h)))


def listing(d: Dialect, p: PoolSQL, kind: str | None) -> Plan[list[tuple[Header, str | None]]]:
    """Every container (or only one ``kind``) by name, each with its parent's name."""
    where, args = ("", ()) if kind is None else (" WHERE p.kind = ?", (kind,))
    rows = yield Rows(
        f"SELECT {_PREFIXED}, q.name FROM context_pools p LEFT JOIN context_pools q ON q.id = p.parent"
        f"{where} ORDER BY {d.by_code_point('p.name')}",
        args,
    )
    return [(Header(*r[:-1]), r[-1]) for r in rows]
