"""Context queues and pools for ``axio-context copy``: every container with its own log entries
(:class:`PoolRow`), and loading a family (a root and its branches) in one transaction.

Headers keep their ``version``, ``size`` and times exactly. Log positions (``seq``, a pool key's
``ord``, a branch's ``fork_seq``, a clear's ``base_seq``) are points in one database's log: a
family is loaded with all of them shifted by one offset past this database's newest, so every
comparison a read makes between them is what it was, and later entries still come after them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axio_context.copying import PoolEntryRow, PoolRow

from ..store.transactions import read_tx, write_tx

__all__ = ["dump_pools", "load_family"]

_HEADER = (
    "p.id, p.name, p.kind, q.name, p.fork_seq, p.base_seq, p.lim, p.tags, p.hooks, p.extra, p.size,"
    " p.version, p.created_at, p.updated_at"
)


def dump_pools(c: Any) -> list[PoolRow]:
    """Every container with its own entries in log order, parents before their branches."""
    with read_tx(c):
        out = []
        for r in c.execute(
            f"SELECT {_HEADER} FROM context_pools p"
            " LEFT JOIN context_pools q ON q.id = p.parent ORDER BY p.id"
        ).fetchall():
            entries = tuple(
                PoolEntryRow(
                    int(e[0]),
                    e[1],
                    int(e[2]),
                    bool(e[3]),
                    e[4],
                    bytes(e[5]),
                    e[6],
                    None if e[7] is None else (e[7], bytes(e[8])),
                )
                for e in c.execute(
                    "SELECT e.seq, e.key, e.ord, e.removed, e.description, e.content, e.extra, v.model,"
                    " v.embedding FROM context_pool_entries e"
                    " LEFT JOIN context_pool_vectors v ON v.seq = e.seq WHERE e.owner = ? ORDER BY e.seq",
                    (r[0],),
                )
            )
            name, kind, parent, fork, base, lim, tags, hooks, extra, size, version, made, changed = r[1:]
            out.append(
                PoolRow(
                    name,
                    kind,
                    parent,
                    fork,
                    base,
                    lim,
                    tags,
                    hooks,
                    extra,
                    size,
                    version,
                    made,
                    changed,
                    entries,
                )
            )
        return out


def _shift(value: int | None, offset: int) -> int | None:
    # 0 (no clear yet) and None (a root) are not log points: they stay as they are.
    return value + offset if value else value


def load_family(c: Any, family: Sequence[PoolRow]) -> None:
    """Create the containers of one family (parents first), none of which exists here."""
    with write_tx(c):
        row = c.execute(
            "SELECT MAX(IFNULL((SELECT seq FROM sqlite_sequence WHERE name = 'context_pool_entries'), 0),"
            " IFNULL((SELECT MAX(MAX(base_seq), IFNULL(MAX(fork_seq), 0)) FROM context_pools), 0))"
        ).fetchone()
        offset = int(row[0])
        top = offset
        ids: dict[str, int] = {}
        for p in family:
            fork, base = _shift(p.fork_seq, offset), _shift(p.base_seq, offset) or 0
            ids[p.name] = c.execute(
                "INSERT INTO context_pools (name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra,"
                " size, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (
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
                ),
            ).fetchone()[0]
            top = max(top, fork or 0, base)
            for e in p.entries:
                seq = e.seq + offset
                c.execute(
                    "INSERT INTO context_pool_entries (seq, owner, key, ord, removed, description, content,"
                    " extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        seq,
                        ids[p.name],
                        e.key,
                        e.ord + offset,
                        int(e.removed),
                        e.description,
                        e.content,
                        e.extra,
                    ),
                )
                if e.vector is not None:
                    c.execute(
                        "INSERT INTO context_pool_vectors (seq, model, embedding) VALUES (?, ?, ?)",
                        (seq, e.vector[0], e.vector[1]),
                    )
                top = max(top, seq)
        # Later entries must come after every point copied (a clear's base_seq from PostgreSQL
        # can lie past its last entry): AUTOINCREMENT continues from sqlite_sequence.
        if (
            c.execute(
                "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'context_pool_entries'", (top,)
            ).rowcount
            == 0
        ):
            c.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('context_pool_entries', ?)", (top,))
