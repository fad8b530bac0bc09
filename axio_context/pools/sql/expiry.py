"""A time to live on context pool items, as part of the pool's log (see :mod:`axio_context.expiry`).

A pool entry may carry ``ttl_ms`` and ``expires_at``. A pool shows the latest entry of each key;
when that entry has expired, the key is **absent** (what the entry replaced stays hidden), as if
a removal had been written at that instant. Every branch that sees the entry sees the same, at the
same time, and each process's copy leaves the item out by its time without asking the database.

A **sweep** never changes what any container shows: it turns each expired entry into a removal
entry at the same log position (its content, description, embedding and text index go), or
deletes it when it hides nothing (a root pool's only entry of its key). Each container that
showed the entry as its key's latest has its ``size`` lowered and its ``version`` moved, so
other processes' copies catch up. A **refresh** (``refresh_on_read``) is a new entry in the
reader's own log: the same item with its TTL started again, in its place; a branch that shares
the old entry keeps its own expiry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from axio_context.expiry import now_ms
from axio_context.sql import Dialect, Execute, ExecuteMany, Plan, Row, Rows, Runner
from axio_context.sql.expiry import SWEEP_BATCH, count_due, in_batches

from .chain import CHAIN, FORKED, VISIBLE, latest_row
from .dialect import PoolSQL
from .rows import HEADER, Header

__all__ = ["ENTRIES", "SQLPoolExpiry", "count", "sweep", "touch"]

#: The table of pool entries, where each entry's TTL is kept.
ENTRIES: Final = "context_pool_entries"

# The container and every branch below it, locked (bind the container's id).
_SUBTREE: Final = (
    "WITH RECURSIVE sub (id) AS (SELECT CAST(? AS BIGINT) UNION ALL"
    " SELECT p.id FROM context_pools p JOIN sub ON p.parent = sub.id)"
    f" SELECT {HEADER} FROM context_pools WHERE id IN (SELECT id FROM sub) ORDER BY id"
)
# Per key among a list, its latest entry a container shows (bind the id, base_seq, the keys).
_LATEST_OF: Final = CHAIN + "SELECT e.key, MAX(e.seq)" + VISIBLE + " AND "
# One owner's expired entries among a batch, each with whether a later (1: none) and an earlier
# entry of its key are in the owner's own log.
_EXPIRED: Final = (
    "SELECT e.seq, e.key, e.ord,"
    " CASE WHEN EXISTS (SELECT 1 FROM context_pool_entries f WHERE f.owner = e.owner AND f.key = e.key"
    " AND f.seq > e.seq) THEN 0 ELSE 1 END,"
    " CASE WHEN EXISTS (SELECT 1 FROM context_pool_entries f WHERE f.owner = e.owner AND f.key = e.key"
    " AND f.seq < e.seq) THEN 1 ELSE 0 END"
    " FROM context_pool_entries e WHERE e.owner = ? AND e.expires_at <= ? AND "
)


def count(d: Dialect, p: PoolSQL, now: int) -> Plan[int]:
    """How many pool entries have expired and wait for a sweep."""
    return (yield from count_due(d, ENTRIES, now))


def _sweep_owner(d: Dialect, owner: int, seqs: list[int], now: int) -> Plan[int]:
    """Sweep ``owner``'s expired entries among ``seqs`` (see the module); how many went."""
    subtree = [Header(*r) for r in (yield Rows(_SUBTREE + d.lock_rows, (owner,)))]
    if not subtree or subtree[0].id != owner:
        return 0
    me = subtree[0]
    rows = yield Rows(_EXPIRED + d.any_of("e.seq", "bigint"), (owner, now, d.list_arg(seqs)))
    lowered: dict[int, int] = {}
    removals = []
    latest: dict[int, dict[str, int]] = {}  # per branch below: each key's latest visible seq
    if len(subtree) > 1 and rows:
        keys = sorted({str(r[1]) for r in rows})
        for h in subtree:
            found = yield Rows(
                _LATEST_OF + d.any_of("e.key") + " GROUP BY e.key", (h.id, h.base_seq, d.list_arg(keys))
            )
            latest[h.id] = {str(k): int(s) for k, s in found}
    for seq, key, ord_, last, older in rows:
        seq = int(seq)
        if len(subtree) == 1:  # no branch: the owner shows it unless it wrote the key since
            shown_by = [owner] if last and seq > me.base_seq else []
        else:
            shown_by = [h.id for h in subtree if latest[h.id].get(str(key)) == seq]
        for cid in shown_by:
            lowered[cid] = lowered.get(cid, 0) + 1
        # A removal keeps hiding what the entry hid: the owner's older entries of the key, or a
        # branch's inherited ones (kept whenever the owner is a branch).
        if shown_by and (me.parent is not None or older):
            removals.append((seq, owner, key, int(ord_), True, b""))
    if not rows:
        return 0
    gone = [int(r[0]) for r in rows]
    yield Execute(f"DELETE FROM context_pool_entries WHERE {d.any_of('seq', 'bigint')}", (d.list_arg(gone),))
    yield ExecuteMany(
        "INSERT INTO context_pool_entries (seq, owner, key, ord, removed, content) VALUES (?, ?, ?, ?, ?, ?)",
        removals,
    )
    yield ExecuteMany(
        "UPDATE context_pools SET size = size - ?, version = version + 1, updated_at = ? WHERE id = ?",
        [(n, now, cid) for cid, n in sorted(lowered.items())],
    )
    return len(gone)


def sweep(d: Dialect, p: PoolSQL, now: int, limit: int) -> Plan[int]:
    """Sweep at most ``limit`` expired pool entries, an owner at a time; how many went."""
    rows = yield Rows(
        "SELECT seq, owner FROM context_pool_entries WHERE expires_at <= ? LIMIT ?", (now, limit)
    )
    by_owner: dict[int, list[int]] = {}
    for seq, owner in rows:
        by_owner.setdefault(int(owner), []).append(int(seq))
    gone = 0
    for owner, seqs in sorted(by_owner.items()):
        gone += yield from _sweep_owner(d, owner, seqs, now)
    return gone


def touch(
    d: Dialect, p: PoolSQL, cid: int, keys: Sequence[str], now: int
) -> Plan[tuple[Header, int, dict[str, tuple[int, int, int]]]]:
    """Restart the TTL of the live items among ``keys`` that have one: each a new entry in this
    container's log, a copy of the one it shows, in its place. Returns the new header, the
    version it had before, and per refreshed key (old seq, new seq, new expiry time)."""
    row = yield Row(f"SELECT {HEADER} FROM context_pools WHERE id = ?{d.lock_rows}", (cid,))
    if row is None:
        raise LookupError(f"the pool with id {cid} is no longer in the database")
    h = Header(*row)
    done: dict[str, tuple[int, int, int]] = {}
    for key in keys:
        found = yield from latest_row(h, key)
        if found is None or found[2] or found[3] is None or found[3] <= now:
            continue
        made = yield Row(  # the copy, its TTL started again at ``now`` (none: the entry has no TTL)
            "INSERT INTO context_pool_entries (seq, owner, key, ord, description, content, extra,"
            " ttl_ms, expires_at) SELECT s, ?, key, ?, description, content, extra, ttl_ms, ? + ttl_ms"
            f" FROM (SELECT {p.new_seq} AS s) n, context_pool_entries WHERE seq = ? AND ttl_ms IS NOT NULL"
            " RETURNING seq, expires_at",
            (cid, found[1], now, found[0]),
        )
        if made is None:
            continue
        seq, expires = int(made[0]), int(made[1])
        yield Execute(
            "INSERT INTO context_pool_vectors (seq, model, embedding)"
            " SELECT ?, model, embedding FROM context_pool_vectors WHERE seq = ?",
            (seq, found[0]),
        )
        yield Execute(
            f"DELETE FROM context_pool_entries WHERE owner = ? AND key = ? AND seq > {FORKED} AND seq < ?",
            (cid, key, cid, seq),
        )
        done[key] = (found[0], seq, expires)
    if not done:
        return h, h.version, done
    bumped = yield Row(
        f"UPDATE context_pools SET version = version + 1, updated_at = ? WHERE id = ? RETURNING {HEADER}",
        (now, cid),
    )
    return Header(*bumped), h.version, done


class SQLPoolExpiry:
    """The expired items of every context pool in one database, counted and swept (what
    ``axio-context prune --expired``, ``stats`` and a store's sweeper call)."""

    def __init__(self, runner: Runner, sql: PoolSQL) -> None:
        self._runner, self._sql = runner, sql

    async def count_expired(self) -> int:
        """How many pool entries have expired and wait for a sweep (by the expiry index)."""
        return await self._runner.read(count, self._sql, now_ms())

    async def sweep_expired(self, *, batch: int = SWEEP_BATCH) -> int:
        """Turn every expired entry into a removal (or delete it), at most ``batch`` a
        transaction; what every container shows is the same before and after. How many went."""
        return await in_batches(self._runner, sweep, self._sql, now_ms(), batch=batch)
