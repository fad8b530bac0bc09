"""Memory blocks in ``axio-context copy`` and in ``blocks export``/``blocks import``, written once
as plans: each block with its whole history and its attachments as one :class:`BlockRow`,
written back as it was (the same id, versions, times, authors and runs)."""

from __future__ import annotations

from typing import Final

import msgspec

from axio_context.sql import Dialect, Execute, ExecuteMany, Plan, Rows, Value

__all__ = [
    "BlockRow",
    "BlockVersionRow",
    "block_key",
    "clashing_blocks",
    "dump_blocks",
    "load_block",
    "load_blocks",
]


class BlockVersionRow(msgspec.Struct, frozen=True):
    """One stored version of a block, as its row holds it (times in ms since the epoch)."""

    version: int
    action: str
    label: str
    value: str
    char_limit: int
    description: str
    read_only: bool
    undo_to: int | None
    redo_to: int | None
    agent_id: str
    run_id: str
    created_at: int


class BlockRow(msgspec.Struct, frozen=True):
    """One block: its row, every version and the agents a shared block is attached to."""

    id: str
    agent_id: str
    label: str
    value: str
    char_limit: int
    description: str
    read_only: bool
    version: int
    created_at: int
    updated_at: int
    versions: tuple[BlockVersionRow, ...] = ()
    agents: tuple[str, ...] = ()


def block_key(row: BlockRow) -> str:
    """What names a block across databases: its owner and label."""
    return f"{row.agent_id or '(shared)'}/{row.label}"


_BLOCK: Final = (
    "id, agent_id, label, value, char_limit, description, read_only, version, created_at, updated_at"
)
_VERSION: Final = (
    "version, action, label, value, char_limit, description, read_only, undo_to, redo_to, agent_id, run_id,"
    " created_at"
)


def dump_blocks(d: Dialect) -> Plan[list[BlockRow]]:
    """Every block with its history and attachments, by id."""
    blocks = yield Rows(f"SELECT {_BLOCK} FROM memory_blocks ORDER BY {d.by_code_point('id')}")
    versions = yield Rows(
        f"SELECT block_id, {_VERSION} FROM memory_block_versions ORDER BY block_id, version"
    )
    links = yield Rows("SELECT block_id, agent_id FROM memory_block_agents")
    by_block: dict[str, list[BlockVersionRow]] = {}
    for r in versions:
        by_block.setdefault(str(r[0]), []).append(
            BlockVersionRow(
                int(r[1]),
                str(r[2]),
                str(r[3]),
                str(r[4]),
                int(r[5]),
                str(r[6]),
                bool(r[7]),
                None if r[8] is None else int(r[8]),
                None if r[9] is None else int(r[9]),
                str(r[10]),
                str(r[11]),
                int(r[12]),
            )
        )
    agents: dict[str, list[str]] = {}
    for r in links:
        agents.setdefault(str(r[0]), []).append(str(r[1]))
    return [
        BlockRow(
            str(r[0]),
            str(r[1]),
            str(r[2]),
            str(r[3]),
            int(r[4]),
            str(r[5]),
            bool(r[6]),
            int(r[7]),
            int(r[8]),
            int(r[9]),
            tuple(by_block.get(str(r[0]), ())),
            tuple(sorted(agents.get(str(r[0]), ()))),
        )
        for r in blocks
    ]


def load_block(d: Dialect, row: BlockRow, replace: bool = False) -> Plan[bool]:
    """Write one dumped block as it was; False (nothing written) when a block with its id, or its
    owner and label, is there and ``replace`` is false (with it: that block is replaced)."""
    there = yield Value(
        "SELECT id FROM memory_blocks WHERE id = ? OR (agent_id = ? AND label = ?)",
        (row.id, row.agent_id, row.label),
    )
    if there is not None:
        if not replace:
            return False
        for table in ("memory_block_agents", "memory_block_versions"):
            yield Execute(f"DELETE FROM {table} WHERE block_id = ?", (there,))
        yield Execute("DELETE FROM memory_blocks WHERE id = ?", (there,))
    yield Execute(
        f"INSERT INTO memory_blocks ({_BLOCK}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (row.id, row.agent_id, row.label, d.sealed(row.value), row.char_limit, d.sealed(row.description),
         int(row.read_only), row.version, row.created_at, row.updated_at),
    )  # fmt: skip
    if row.versions:
        yield ExecuteMany(
            f"INSERT INTO memory_block_versions (block_id, {_VERSION})"
            f" VALUES ({', '.join('?' * 13)})",
            [
                (row.id, v.version, v.action, v.label, d.sealed(v.value), v.char_limit,
                 d.sealed(v.description), int(v.read_only), v.undo_to, v.redo_to, v.agent_id, v.run_id,
                 v.created_at)
                for v in row.versions
            ],
        )  # fmt: skip
    if row.agents:
        yield ExecuteMany(
            "INSERT INTO memory_block_agents (block_id, agent_id) VALUES (?, ?)",
            [(row.id, a) for a in row.agents],
        )
    return True


def clashing_blocks(d: Dialect, rows: list[BlockRow]) -> Plan[list[str]]:
    """The :func:`block_key` of each of ``rows`` that a block here has the id, or the owner and
    label, of (what an import refuses unless it replaces)."""
    here = yield Rows("SELECT id, agent_id, label FROM memory_blocks")
    ids = {str(r[0]) for r in here}
    keys = {(str(r[1]), str(r[2])) for r in here}
    return [block_key(r) for r in rows if r.id in ids or (r.agent_id, r.label) in keys]


def load_blocks(d: Dialect, rows: list[BlockRow], replace: bool = False) -> Plan[list[bool]]:
    """:func:`load_block` for each of ``rows``, in the caller's transaction."""
    done = []
    for row in rows:
        done.append((yield from load_block(d, row, replace)))
    return done
