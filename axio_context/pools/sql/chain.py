"""The log a container reads: its own entries and its ancestors' up to each branch's cut, as SQL
the plans share (:mod:`.plans`, :mod:`.expiry`), and the reads of one key's latest entry and of
how many items a pool shows while some have expired."""

from __future__ import annotations

from typing import Final

from axio_context.sql import Plan, Row, Value

from .rows import Header

__all__ = ["CHAIN", "FORKED", "VISIBLE", "latest_row", "live_size"]

# The container and its ancestors, each with the last seq it shows there (NULL: all). A link's
# cut is the smallest fork_seq below it (branches of a branch are younger, so that is the
# nearest one's; the CASE keeps it right for copied families too).
CHAIN: Final = (
    "WITH RECURSIVE chain (owner, up, up_cut, cut) AS ("
    " SELECT id, parent, fork_seq, CAST(NULL AS BIGINT) FROM context_pools WHERE id = ?"
    " UNION ALL SELECT p.id, p.parent,"
    " CASE WHEN c.up_cut < p.fork_seq THEN c.up_cut ELSE p.fork_seq END, c.up_cut"
    " FROM chain c JOIN context_pools p ON p.id = c.up) "
)
# CROSS JOIN: SQLite then walks the chain first and each owner's entries by index (a plain join
# let it scan every entry after base_seq: 500 us instead of 20 for one key of 2,000).
VISIBLE: Final = (
    " FROM chain c CROSS JOIN context_pool_entries e"
    " WHERE e.owner = c.owner AND e.seq > ? AND (c.cut IS NULL OR e.seq <= c.cut)"
)
#: Entries at or before this are seen by a branch of the container (bound once more): kept.
FORKED: Final = "COALESCE((SELECT MAX(fork_seq) FROM context_pools WHERE parent = ?), -1)"
# How many visible keys' latest entry has expired (bind id, base_seq, now): found by the expiry
# index, so it costs nothing while no entry of the pool's chain has expired.
_EXPIRED_KEYS: Final = (
    CHAIN + "SELECT count(*) FROM context_pool_entries e JOIN chain c ON c.owner = e.owner"
    " WHERE e.expires_at <= ? AND e.seq > ? AND (c.cut IS NULL OR e.seq <= c.cut)"
    " AND NOT EXISTS (SELECT 1 FROM chain c2 CROSS JOIN context_pool_entries f WHERE f.owner = c2.owner"
    " AND f.key = e.key AND f.seq > e.seq AND (c2.cut IS NULL OR f.seq <= c2.cut))"
)
_LATEST: Final = (
    CHAIN
    + "SELECT e.seq, e.ord, e.removed, e.expires_at"
    + VISIBLE
    + " AND e.key = ? ORDER BY e.seq DESC LIMIT 1"
)


def latest_row(h: Header, key: str) -> Plan[tuple[int, int, bool, int | None] | None]:
    """(seq, ord, removed, expires_at) of the key's latest visible entry (None: there is none)."""
    row = yield Row(_LATEST, (h.id, h.base_seq, key))
    if row is None:
        return None
    return int(row[0]), int(row[1]), bool(row[2]), None if row[3] is None else int(row[3])


def live_size(h: Header, now: int) -> Plan[int]:
    """How many items the pool shows at ``now``: its ``size`` counts the keys whose latest entry
    has expired until a sweep turns them into removals."""
    return h.size - int((yield Value(_EXPIRED_KEYS, (h.id, now, h.base_seq))) or 0)
