"""Context queues and pools for ``axio-context copy`` on PostgreSQL: every container with its own
log entries (:class:`PoolRow`), and loading a family (a root and its branches) in the caller's
transaction, its log positions shifted by one offset past this database's sequence (see
:mod:`axio_context_sqlite.pools.transfer`: every comparison a read makes stays what it was)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from axio_context.copying import PoolEntryRow, PoolRow

__all__ = ["dump_pools", "load_family"]

_HEADER = (
    "p.id, p.name, p.kind, q.name, p.fork_seq, p.base_seq, p.lim, p.tags, p.hooks, p.extra, p.size,"
    " p.version, p.created_at, p.updated_at"
)


async def dump_pools(conn: Any) -> list[PoolRow]:
    """Every container with its own entries in log order, parents before their branches."""
    out = []
    for r in await conn.fetch(
        f"SELECT {_HEADER} FROM context_pools p LEFT JOIN context_pools q ON q.id = p.parent ORDER BY p.id"
    ):
        rows = await conn.fetch(
            "SELECT e.seq, e.key, e.ord, e.removed, e.description, e.content, e.extra, v.model, v.embedding"
            " FROM context_pool_entries e LEFT JOIN context_pool_vectors v ON v.seq = e.seq"
            " WHERE e.owner = $1 ORDER BY e.seq",
            r[0],
        )
        entries = tuple(
            PoolEntryRow(
                int(e[0]),
                e[1],
                int(e[2]),
                bool(e[3]),
                e[4],
                bytes(e[5]),
                e[6],
                None if e[7] is None else (e[7], array("f", e[8]).tobytes()),
            )
            for e in rows
        )
        h = tuple(r)[1:]
        out.append(
            PoolRow(
                h[0],
                h[1],
                h[2],
                None if h[3] is None else int(h[3]),
                int(h[4]),
                h[5],
                h[6],
                h[7],
                h[8],
                int(h[9]),
                int(h[10]),
                int(h[11]),
                int(h[12]),
                entries=entries,
            )
        )
    return out


def _shift(value: int | None, offset: int) -> int | None:
    # 0 (no clear yet) and None (a root) are not log points: they stay as they are.
    return value + offset if value else value


async def load_family(conn: Any, family: Sequence[PoolRow]) -> None:
    """Create the containers of one family (parents first), none of which exists here."""
    # The sequence's row lock queues two copies; every writer's later values exceed what we set.
    await conn.execute("LOCK TABLE context_pools IN SHARE ROW EXCLUSIVE MODE")
    offset = int(
        await conn.fetchval(
            "SELECT GREATEST((SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM context_pool_seq),"
            " (SELECT COALESCE(MAX(GREATEST(base_seq, COALESCE(fork_seq, 0))), 0) FROM context_pools))"
        )
    )
    top = offset
    ids: dict[str, int] = {}
    for p in family:
        fork, base = _shift(p.fork_seq, offset), _shift(p.base_seq, offset) or 0
        ids[p.name] = await conn.fetchval(
            "INSERT INTO context_pools (name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra,"
            " size, version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,"
            " $12, $13) RETURNING id",
            p.name,
            p.kind,
            None if p.parent is None else ids[p.parent],
            fork,
            base,
            p.lim,
            p.tags,
            p.hooks,
            p.extra,
            p.size,
            p.version,
            p.created_at,
            p.updated_at,
        )
        top = max(top, fork or 0, base)
        await conn.executemany(
            "INSERT INTO context_pool_entries (seq, owner, key, ord, removed, description, content, extra)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            [
                (
                    e.seq + offset,
                    ids[p.name],
                    e.key,
                    e.ord + offset,
                    e.removed,
                    e.description,
                    e.content,
                    e.extra,
                )
                for e in p.entries
            ],
        )
        await conn.executemany(
            "INSERT INTO context_pool_vectors (seq, model, embedding) VALUES ($1, $2, $3::real[])",
            [
                (e.seq + offset, e.vector[0], list(array("f", e.vector[1])))
                for e in p.entries
                if e.vector is not None
            ],
        )
        top = max([top, *(e.seq + offset for e in p.entries)])
    if top > 0:
        await conn.execute("SELECT setval('context_pool_seq', $1)", top)
