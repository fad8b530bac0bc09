"""The SQL of persisted context queues and pools, run on the connection's worker thread.

A container's entries are an append-only log (``context_pool_entries``, ``seq`` never reused);
what a container holds is computed from its own entries and, for a branch, its parent chain's
entries up to each link's ``fork_seq``: a queue is the newest ``lim`` entries after
``base_seq``, a pool the latest entry per key (a ``removed`` entry hides the key), ordered by
``ord`` (a key's first insertion, kept when it is replaced). So a branch is one row and no
copy. Every change is one write transaction that starts by reading the container's
``version``: when it differs from what the caller last saw (another process or connection
changed it), the state is reloaded under the write lock and the change is computed from it,
so no update is lost. Entries no branch can see any more are deleted as they are superseded.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import msgspec

from ..store.keys import now_ms
from ..store.transactions import read_tx, write_tx

__all__ = ["Entry", "Header", "State"]

_JSON: Final = msgspec.json.Encoder()
_HEADER: Final = ", ".join(
    (
        *("id", "name", "kind", "parent", "fork_seq", "base_seq", "lim", "tags", "hooks", "extra"),
        *("size", "version", "created_at", "updated_at"),
    )
)


class Header(NamedTuple):
    """One ``context_pools`` row."""

    id: int
    name: str
    kind: str
    parent: int | None
    fork_seq: int | None
    base_seq: int
    lim: int | None
    tags: str
    hooks: str
    extra: str
    size: int
    version: int
    created_at: int
    updated_at: int


class Entry(NamedTuple):
    """One visible item: its log position, key, insertion order, description, packed content
    and packed extra keys (None: none)."""

    seq: int
    key: str | None
    ord: int
    description: str | None
    content: bytes
    extra: bytes | None


#: An item ready to store: (id, description, packed content, packed extra keys or None).
Packed = tuple[str | None, str | None, bytes, bytes | None]


class State(NamedTuple):
    """A container's header and its visible entries (a queue oldest first, a pool by ``ord``)."""

    header: Header
    entries: list[Entry]


def header(c: Any, name: str) -> Header | None:
    row = c.execute(f"SELECT {_HEADER} FROM context_pools WHERE name = ?", (name,)).fetchone()
    return None if row is None else Header(*row)


def _by_id(c: Any, cid: int) -> Header:
    return Header(*c.execute(f"SELECT {_HEADER} FROM context_pools WHERE id = ?", (cid,)).fetchone())


def _chain(c: Any, h: Header) -> list[tuple[int, int | None]]:
    """(owner, last visible seq or None for all) from the container up to its root."""
    links: list[tuple[int, int | None]] = [(h.id, None)]
    cut, parent = h.fork_seq, h.parent
    while parent is not None:
        links.append((parent, cut))
        row = c.execute("SELECT parent, fork_seq FROM context_pools WHERE id = ?", (parent,)).fetchone()
        parent, fork = row[0], row[1]
        cut = fork if cut is None or fork is None else min(cut, fork)
    return links


def chain_owners(c: Any, cid: int) -> list[int]:
    """The container and its ancestors: every owner whose entries it may show."""
    with read_tx(c):
        return [owner for owner, _ in _chain(c, _by_id(c, cid))]


def _union(c: Any, h: Header, columns: str, key: str | None = None) -> tuple[str, list[Any]]:
    parts, params = [], []
    for owner, cut in _chain(c, h):
        sql = f"SELECT {columns} FROM context_pool_entries WHERE owner = ? AND seq > ?"
        ps: list[Any] = [owner, h.base_seq]
        if cut is not None:
            sql += " AND seq <= ?"
            ps.append(cut)
        if key is not None:
            sql += " AND key = ?"
            ps.append(key)
        parts.append(sql)
        params.extend(ps)
    return " UNION ALL ".join(parts), params


def _entries(c: Any, h: Header) -> list[Entry]:
    if h.kind == "queue":
        sql, ps = _union(c, h, "seq, key, ord, description, content, extra")
        rows = c.execute(f"SELECT * FROM ({sql}) ORDER BY seq DESC LIMIT ?", (*ps, h.lim)).fetchall()
        return [Entry(*r) for r in reversed(rows)]
    sql, ps = _union(c, h, "seq, key, ord, removed, description, content, extra")
    live: dict[str, Entry] = {}
    for seq, key, ord_, removed, desc, content, extra in c.execute(f"SELECT * FROM ({sql}) ORDER BY seq", ps):
        if removed:
            live.pop(key, None)
        else:
            live[key] = Entry(seq, key, ord_, desc, content, extra)
    return sorted(live.values(), key=lambda e: e.ord)


def load(c: Any, name: str) -> State | None:
    """The container called ``name`` and what it holds, in one read snapshot."""
    with read_tx(c):
        h = header(c, name)
        return None if h is None else State(h, _entries(c, h))


def version(c: Any, cid: int) -> int:
    row = c.execute("SELECT version FROM context_pools WHERE id = ?", (cid,)).fetchone()
    return -1 if row is None else int(row[0])


def create(
    c: Any,
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
    or, unless ``new``, the existing one of that name, left as it is."""
    from axio_context.pools.errors import PoolExistsError

    with write_tx(c):
        h = header(c, name)
        if h is not None:
            if new:
                raise PoolExistsError(f"a {h.kind} named {name!r} already exists")
            return State(h, _entries(c, h))
        now = now_ms()
        cid = c.execute(
            "INSERT INTO context_pools (name, kind, lim, tags, hooks, extra, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                name,
                kind,
                lim,
                _JSON.encode(tags).decode(),
                _JSON.encode(hooks).decode(),
                _JSON.encode(extra).decode(),
                now,
                now,
            ),
        ).fetchone()[0]
        ords: dict[str | None, int] = {}
        for key, desc, content, item_extra in items:
            seq = _insert(c, cid, key, ords.get(key) if kind == "pool" else None, desc, content, item_extra)
            ords.setdefault(key, seq)
        size = len({item[0] for item in items}) if kind == "pool" else min(len(items), lim or len(items))
        c.execute("UPDATE context_pools SET size = ? WHERE id = ?", (size, cid))
        h = _by_id(c, cid)
        return State(h, _entries(c, h))


def _insert(
    c: Any, cid: int, key: str | None, ord_: int | None, desc: str | None, content: bytes, extra: bytes | None
) -> int:
    # A new key's order is one past the newest entry: later than every entry so far, and (the
    # next seq being at least that) never later than a key inserted after it.
    return int(
        c.execute(
            "INSERT INTO context_pool_entries (owner, key, ord, description, content, extra) VALUES"
            " (?, ?, COALESCE(?, (SELECT IFNULL(MAX(seq), 0) + 1 FROM context_pool_entries)), ?, ?, ?)"
            " RETURNING seq",
            (cid, key, ord_, desc, content, extra),
        ).fetchone()[0]
    )


def _max_fork(c: Any, cid: int) -> int:
    """Entries at or before this are seen by a branch: never deleted."""
    row = c.execute("SELECT MAX(fork_seq) FROM context_pools WHERE parent = ?", (cid,)).fetchone()
    return -1 if row[0] is None else int(row[0])


def _last_seq(c: Any) -> int:
    """The newest entry's seq: every later entry gets a larger one (AUTOINCREMENT never reuses
    a seq, even the one of a deleted newest entry)."""
    row = c.execute("SELECT MAX(seq) FROM context_pool_entries").fetchone()
    return 0 if row[0] is None else int(row[0])


def _bump(c: Any, cid: int, size: int) -> Header:
    row = c.execute(
        "UPDATE context_pools SET size = ?, version = version + 1, updated_at = ? WHERE id = ?"
        f" RETURNING {_HEADER}",
        (size, now_ms(), cid),
    ).fetchone()
    return Header(*row)


def _fresh(c: Any, cid: int, seen: int) -> tuple[Header, list[Entry] | None]:
    """The header under the write lock, and the state when ``seen`` is not its version."""
    h = _by_id(c, cid)
    return h, (None if h.version == seen else _entries(c, h))


def queue_append(c: Any, cid: int, seen: int, items: list[Packed]) -> tuple[State | None, list[int]]:
    """Append ``items`` in one transaction: (the fresh state when the cache was stale, seqs)."""
    with write_tx(c):
        h, stale = _fresh(c, cid, seen)
        seqs = [_insert(c, cid, key, None, desc, content, extra) for key, desc, content, extra in items]
        assert h.lim is not None
        # Own entries older than the newest `lim` are out of the window for good.
        c.execute(
            "DELETE FROM context_pool_entries WHERE owner = ? AND seq > ? AND seq < (SELECT seq FROM"
            " context_pool_entries WHERE owner = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
            (cid, _max_fork(c, cid), cid, h.lim - 1),
        )
        h = _bump(c, cid, min(h.lim, h.size + len(items)))
        return (None if stale is None else State(h, _entries(c, h))), seqs


def clear(c: Any, cid: int) -> Header:
    """Hide every entry (``base_seq`` moves to the last one) and delete the ones no branch sees."""
    with write_tx(c):
        c.execute("UPDATE context_pools SET base_seq = ? WHERE id = ?", (_last_seq(c), cid))
        c.execute("DELETE FROM context_pool_entries WHERE owner = ? AND seq > ?", (cid, _max_fork(c, cid)))
        return _bump(c, cid, 0)


def _latest(c: Any, h: Header, key: str) -> tuple[int, int, int] | None:
    """(seq, ord, removed) of the key's latest visible entry, or None."""
    sql, ps = _union(c, h, "seq, ord, removed", key)
    row = c.execute(f"SELECT * FROM ({sql}) ORDER BY seq DESC LIMIT 1", ps).fetchone()
    return None if row is None or row[2] else (int(row[0]), int(row[1]), int(row[2]))


def _drop_key(c: Any, h: Header, key: str, ord_: int) -> None:
    """Hide ``key``: delete its own older entries no branch sees, and write a removal entry
    unless nothing of the key is left to hide (a root container's common case)."""
    c.execute(
        "DELETE FROM context_pool_entries WHERE owner = ? AND key = ? AND seq > ?",
        (h.id, key, _max_fork(c, h.id)),
    )
    left = c.execute(
        "SELECT 1 FROM context_pool_entries WHERE owner = ? AND key = ? LIMIT 1", (h.id, key)
    ).fetchone()
    if h.parent is not None or left is not None:
        c.execute(
            "INSERT INTO context_pool_entries (owner, key, ord, removed, content) VALUES (?, ?, ?, 1, x'')",
            (h.id, key, ord_),
        )


def pool_add(
    c: Any,
    cid: int,
    seen: int,
    key: str,
    desc: str,
    content: bytes,
    extra: bytes | None,
    oldest: str | None,
    vector: tuple[str, bytes] | None,
) -> tuple[State | None, str | None, int]:
    """Add or replace ``key`` in one transaction, evicting the oldest key of a full pool first
    (``oldest`` is the caller's view of it, recomputed when stale). Returns (fresh state when
    the cache was stale, the evicted key, the new entry's seq)."""
    with write_tx(c):
        h, stale = _fresh(c, cid, seen)
        if stale is not None:
            oldest = stale[0].key if stale else None
        found = _latest(c, h, key)
        size, evicted = h.size, None
        if found is None and h.lim is not None and size >= h.lim and oldest is not None:
            old = _latest(c, h, oldest)
            if old is not None:
                _drop_key(c, h, oldest, old[1])
                size, evicted = size - 1, oldest
        seq = _insert(c, cid, key, None if found is None else found[1], desc, content, extra)
        c.execute(
            "DELETE FROM context_pool_entries WHERE owner = ? AND key = ? AND seq > ? AND seq < ?",
            (cid, key, _max_fork(c, cid), seq),
        )
        if vector is not None:
            c.execute(
                "INSERT INTO context_pool_vectors (seq, model, embedding) VALUES (?, ?, ?)", (seq, *vector)
            )
        h = _bump(c, cid, size + (found is None))
        return (None if stale is None else State(h, _entries(c, h))), evicted, seq


def pool_remove(c: Any, cid: int, key: str) -> Header | None:
    """Remove ``key`` in one transaction; None when it is not there."""
    with write_tx(c):
        h = _by_id(c, cid)
        found = _latest(c, h, key)
        if found is None:
            return None
        _drop_key(c, h, key, found[1])
        return _bump(c, cid, h.size - 1)


def branch(
    c: Any,
    cid: int,
    name: str | None,
    lim: int | None,
    hooks: dict[str, list[str]] | None,
    seen: int,
    drop: list[str],
) -> tuple[Header, list[Entry] | None]:
    """A new container seeing this one's entries so far: one row, no entry copied. A pool
    branched with a smaller limit also writes one removal entry per item it drops, oldest
    first: ``drop``, the caller's view of them when its ``seen`` version is current. Returns
    the new header, and the child's entries only when the caller's view was stale."""
    from axio_context.pools.errors import PoolExistsError

    with write_tx(c):
        p = _by_id(c, cid)
        if name is None:
            name = free_name(c, p.name)
        elif header(c, name) is not None:
            raise PoolExistsError(f"a queue or pool named {name!r} already exists")
        now = now_ms()
        new = c.execute(
            "INSERT INTO context_pools (name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra,"
            " size, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                name,
                p.kind,
                cid,
                _last_seq(c),
                p.base_seq,
                lim,
                p.tags,
                p.hooks if hooks is None else _JSON.encode(hooks).decode(),
                p.extra,
                p.size if lim is None else min(p.size, lim),
                now,
                now,
            ),
        ).fetchone()[0]
        h = _by_id(c, new)
        if p.kind == "pool" and lim is not None and p.size > lim:
            if p.version != seen:
                drop = [str(e.key) for e in _entries(c, h)[: p.size - lim]]
            for key in drop:
                _drop_key(c, h, key, 0)
        return h, (None if p.version == seen else _entries(c, h))


def free_name(c: Any, base: str) -> str:
    """``base/1``, ``base/2``, ...: the first name not taken (the default name of a branch)."""
    n = 1
    while c.execute("SELECT 1 FROM context_pools WHERE name = ?", (f"{base}/{n}",)).fetchone():
        n += 1
    return f"{base}/{n}"


def listing(c: Any, kind: str | None) -> list[Header]:
    with read_tx(c):
        sql, ps = f"SELECT {_HEADER} FROM context_pools", []
        if kind is not None:
            sql, ps = sql + " WHERE kind = ?", [kind]
        return [Header(*r) for r in c.execute(sql + " ORDER BY name", ps)]


def parent_name(c: Any, pid: int | None) -> str | None:
    if pid is None:
        return None
    row = c.execute("SELECT name FROM context_pools WHERE id = ?", (pid,)).fetchone()
    return None if row is None else str(row[0])
