"""Context queues and pools for ``axio-context copy``: every container with its own log entries
(:class:`PoolRow`), and loading a family (a root and its branches) in the caller's transaction.

Headers keep their ``version``, ``size`` and times exactly, and entries their TTL and expiry
time (an expired pool item arrives expired: never shown, and gone with the destination's next
sweep). Log positions (``seq``, a pool key's ``ord``, a branch's ``fork_seq``, a clear's
``base_seq``) are points in one database's log: a family is loaded with all of them shifted by
one offset past this database's newest, so every comparison a read makes between them is what it
was, and later entries still come after them.
"""

from __future__ import annotations

from collections.abc import Sequence

from axio_context.copying import PoolEntryRow, PoolRow
from axio_context.sql import Dialect, ExecuteMany, Plan, Row, Rows, Value

from .dialect import PoolSQL

__all__ = ["dump_pools", "load_family"]

_HEADER = (
    "p.id, p.name, p.kind, q.name, p.fork_seq, p.base_seq, p.lim, p.tags, p.hooks, p.extra, p.size,"
    " p.version, p.created_at, p.updated_at"
)


def dump_pools(d: Dialect, p: PoolSQL) -> Plan[list[PoolRow]]:
    """Every container with its own entries in log order, parents before their branches."""
    out = []
    for r in (
        yield Rows(
            f"SELECT {_HEADER} FROM context_pools p"
            " LEFT JOIN context_pools q ON q.id = p.parent ORDER BY p.id"
        )
    ):
        rows = yield Rows(
            "SELECT e.seq, e.key, e.ord, e.removed, e.description, e.content, e.extra, v.model, v.embedding,"
            " e.ttl_ms, e.expires_at"
            " FROM context_pool_entries e LEFT JOIN context_pool_vectors v ON v.seq = e.seq"
            " WHERE e.owner = ? ORDER BY e.seq",
            (r[0],),
        )
        entries = tuple(
            PoolEntryRow(
                int(e[0]),
                e[1],
                int(e[2]),
                bool(e[3]),
                e[4],
                bytes(e[5]),
                None if e[6] is None else bytes(e[6]),
                None if e[7] is None else (e[7], p.vector_blob(e[8])),
                None if e[9] is None else int(e[9]),
                None if e[10] is None else int(e[10]),
            )
            for e in rows
        )
        name, kind, parent, fork, base, lim, tags, hooks, extra, size, version, made, changed = r[1:]
        out.append(
            PoolRow(
                name,
                kind,
                parent,
                None if fork is None else int(fork),
                int(base),
                lim,
                tags,
                hooks,
                extra,
                int(size),
                int(version),
                int(made),
                int(changed),
                entries,
            )
        )
    return out


def _shift(value: int | None, offset: int) -> int | None:
    # 0 (no clear yet) and None (a root) are not log points: they stay as they are.
    return value + offset if value else value


def load_family(d: Dialect, p: PoolSQL, family: Sequence[PoolRow]) -> Plan[None]:
    """Create the containers of one family (parents first), none of which exists here."""
    yield from p.lock_log()
    marks = yield Row("SELECT MAX(base_seq), MAX(fork_seq) FROM context_pools")
    offset = max([(yield from p.log_start()), *(int(m) for m in marks if m is not None)])
    top = offset
    ids: dict[str, int] = {}
    for c in family:
        fork, base = _shift(c.fork_seq, offset), _shift(c.base_seq, offset) or 0
        ids[c.name] = yield Value(
            "INSERT INTO context_pools (name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra,"
            " size, version, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                c.name,
                c.kind,
                None if c.parent is None else ids[c.parent],
                fork,
                base,
                c.lim,
                c.tags,
                c.hooks,
                c.extra,
                c.size,
                c.version,
                c.created_at,
                c.updated_at,
            ),
        )
        yield ExecuteMany(
            "INSERT INTO context_pool_entries (seq, owner, key, ord, removed, description, content, extra,"
            " ttl_ms, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    e.seq + offset,
                    ids[c.name],
                    e.key,
                    e.ord + offset,
                    e.removed,
                    d.sealed(e.description),
                    d.sealed(e.content),
                    d.sealed(e.extra),
                    e.ttl_ms,
                    e.expires_at,
                )
                for e in c.entries
            ],
        )
        yield ExecuteMany(
            f"INSERT INTO context_pool_vectors (seq, model, embedding) VALUES (?, ?, {p.vector_placeholder})",
            [
                (e.seq + offset, e.vector[0], p.vector_param(e.vector[1]))
                for e in c.entries
                if e.vector is not None
            ],
        )
        top = max([top, fork or 0, base, *(e.seq + offset for e in c.entries)])
    # Later entries must come after every point copied (a clear's base_seq can lie past its
    # last entry).
    yield from p.advance_log(top)
