"""Memory blocks on any SQL backend, written once as plans (:mod:`axio_context.sql`).

A block is a ``memory_blocks`` row holding its current fields and ``version``; every change adds
a ``memory_block_versions`` row (the block's fields after it, its action, when, which agent and
which run) and moves the block to it, in one transaction. A write first reads the block with its
row locked (SQLite's write transaction already excludes other writers), refuses a version other
than the one the writer names (:class:`~.errors.StaleVersionError`), then checks the new value
(limit, read-only): an error raised in the plan rolls the whole transaction back, so nothing is
half-written.

Undo and redo are changes too: each version row records ``undo_to`` (the version whose fields
an undo restores, its label included) and ``redo_to`` (what a redo restores), as an editor's undo
stack does; a plain edit clears the redo. A block is owned by an agent (``agent_id``) or shared
(``''``); a shared block is visible to the agents ``memory_block_agents`` attaches it to.

A delete is a version too (action ``delete``, the fields as they were): the block's row, history
and attachments stay, every read but ``history`` (and undo and redo) leaves it out, an undo
brings it back, and a redo of that undo deletes it again (recorded as a ``delete``). A deleted
block keeps its label: a ``create`` of the same label by the same owner starts it again, its
history going on; another block cannot take the label meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, NamedTuple
from uuid import uuid4

import msgspec

from axio_context.sql import Dialect, Execute, Plan, Row, Rows, Value
from axio_context.transcript.times import format_time

from .errors import (
    BlockExistsError,
    BlockNotFoundError,
    ReadOnlyBlockError,
    StaleVersionError,
)
from .model import SHARED, StoredBlock, check_value

__all__ = [
    "DELETED",
    "Fields",
    "attach",
    "blocks_of",
    "clash",
    "create",
    "detach",
    "holds_words",
    "lookup",
    "must",
    "record",
    "search",
    "taken",
    "write",
]

_BLOCK_COLS: Final = (
    "b.id, b.label, b.value, b.char_limit, b.description, b.read_only, b.version, b.agent_id, b.updated_at"
)
_COLS: Final = f"{_BLOCK_COLS}, v.agent_id, v.run_id"
_FROM: Final = "memory_blocks b JOIN memory_block_versions v ON v.block_id = b.id AND v.version = b.version"
_VISIBLE: Final = "(b.agent_id = ? OR b.id IN (SELECT block_id FROM memory_block_agents WHERE agent_id = ?))"
#: The action of a delete: a block whose current version has it is deleted.
DELETED: Final = "delete"


class Fields(NamedTuple):
    """A block's fields after a change."""

    label: str
    value: str
    limit: int
    description: str
    read_only: bool


class _Found(NamedTuple):
    id: str
    block: StoredBlock
    gone: bool = False  # deleted (its current version is a delete)


def _now() -> int:
    return time.time_ns() // 1_000_000


def _block(row: Any, attached: tuple[str, ...] = ()) -> StoredBlock:
    return StoredBlock(
        label=str(row[1]),
        value=str(row[2]),
        limit=int(row[3]),
        description=str(row[4]),
        read_only=bool(row[5]),
        version=int(row[6]),
        agent_id=str(row[7]),
        updated_at=format_time(int(row[8])),
        updated_by=str(row[9]),
        run_id=str(row[10]),
        attached=attached,
    )


def _attached(d: Dialect, ids: list[str]) -> Plan[dict[str, tuple[str, ...]]]:
    if not ids:
        return {}
    rows = yield Rows(
        f"SELECT block_id, agent_id FROM memory_block_agents WHERE {d.any_of('block_id')}"
        f" ORDER BY block_id, {d.by_code_point('agent_id')}",
        (d.list_arg(ids),),
    )
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(str(r[0]), []).append(str(r[1]))
    return {k: tuple(v) for k, v in out.items()}


def lookup(
    d: Dialect, agent_id: str, label: str, lock: bool = False, deleted: bool = False
) -> Plan[_Found | None]:
    """The block ``label`` as ``agent_id`` sees it (its own first, then a shared one attached);
    ``lock``: its row stays locked until the transaction ends (a writer's read); ``deleted``: a
    deleted block too (its history, an undo)."""
    pick = "ORDER BY CASE WHEN b.agent_id = '' THEN 1 ELSE 0 END LIMIT 1"
    if lock and d.lock_rows:
        # The block's row alone is locked, without the join: a lock taken through the join
        # would, after waiting for another writer, recheck the old version row against the new
        # block row and find nothing (PostgreSQL's read-committed recheck). The locked row read
        # is the newest one; who made it and in which run are left out (a writer needs neither).
        row = yield Row(
            f"SELECT {_BLOCK_COLS}, '', '' FROM memory_blocks b WHERE b.label = ? AND {_VISIBLE}"
            f" {pick}{d.lock_rows}",
            (label, agent_id, agent_id),
        )
        if row is None:
            return None
        action = yield Value(  # read after the lock: the newest version's
            "SELECT action FROM memory_block_versions WHERE block_id = ? AND version = ?", (row[0], row[6])
        )
    else:
        row = yield Row(
            f"SELECT {_COLS}, v.action FROM {_FROM} WHERE b.label = ? AND {_VISIBLE} {pick}",
            (label, agent_id, agent_id),
        )
        if row is None:
            return None
        action = row[11]
    gone = action == DELETED
    if gone and not deleted:
        return None
    if str(row[7]):  # an agent's own block: only shared blocks are attached
        return _Found(str(row[0]), _block(row), gone)
    links = yield from _attached(d, [str(row[0])])
    return _Found(str(row[0]), _block(row, links.get(str(row[0]), ())), gone)


def must(d: Dialect, agent_id: str, label: str) -> Plan[_Found]:
    found = yield from lookup(d, agent_id, label, lock=True)
    if found is None:
        raise BlockNotFoundError.of(label, agent_id)
    return found


def record(
    d: Dialect,
    block_id: str,
    old: StoredBlock | None,
    owner: str,
    action: str,
    f: Fields,
    editor: str,
    run_id: str,
    undo_to: int | None,
    redo_to: int | None,
) -> Plan[StoredBlock]:
    """Record the change to ``f`` as the block's next version (1 for a new block, whose row the
    caller inserts) and move the block to it; the block as it now is (not read back)."""
    now = _now()
    version = 1 if old is None else old.version + 1
    if old is None:  # the block's row first: its versions point at it
        yield Execute(
            "INSERT INTO memory_blocks (id, agent_id, label, value, char_limit, description, read_only,"
            " version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
            (
                block_id,
                owner,
                f.label,
                d.sealed(f.value),
                f.limit,
                d.sealed(f.description),
                int(f.read_only),
                now,
                now,
            ),
        )
    yield Execute(
        "INSERT INTO memory_block_versions (block_id, version, action, label, value, char_limit,"
        " description, read_only, undo_to, redo_to, agent_id, run_id, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (block_id, version, action, f.label, d.sealed(f.value), f.limit, d.sealed(f.description),
         int(f.read_only), undo_to, redo_to, editor, run_id, now),
    )  # fmt: skip
    if old is not None:
        yield Execute(
            "UPDATE memory_blocks SET label = ?, value = ?, char_limit = ?, description = ?, read_only = ?,"
            " version = ?, updated_at = ? WHERE id = ?",
            (
                f.label,
                d.sealed(f.value),
                f.limit,
                d.sealed(f.description),
                int(f.read_only),
                version,
                now,
                block_id,
            ),
        )
    return StoredBlock(
        label=f.label,
        value=f.value,
        limit=f.limit,
        description=f.description,
        read_only=f.read_only,
        version=version,
        agent_id=owner,
        updated_at=format_time(now),
        updated_by=editor,
        run_id=run_id,
        attached=() if old is None else old.attached,
    )


def clash(d: Dialect, owner: str, label: str, block_id: str = "") -> Plan[str | None]:
    """Whether ``label`` is taken among the blocks the owner's agents see (another block, a
    deleted one included: it keeps its label): None if not, else the holder's last action
    (:data:`DELETED`: a deleted block holds it)."""
    if d.key_lock is not None:
        yield Execute(d.key_lock, (f"memory_blocks\x1f{owner}",))
    taken = yield Value(
        f"SELECT v.action FROM {_FROM} WHERE b.label = ? AND b.id <> ? AND ("
        " b.agent_id = ? OR b.id IN (SELECT block_id FROM memory_block_agents WHERE agent_id = ?)"
        " OR b.agent_id IN (SELECT agent_id FROM memory_block_agents WHERE block_id = ?)"
        " OR (b.agent_id = '' AND b.id IN (SELECT block_id FROM memory_block_agents WHERE agent_id IN"
        "  (SELECT agent_id FROM memory_block_agents WHERE block_id = ?))))"
        f" ORDER BY CASE WHEN v.action = '{DELETED}' THEN 1 ELSE 0 END LIMIT 1",
        (label, block_id, owner, owner, block_id, block_id),
    )
    return None if taken is None else str(taken)


def taken(label: str, held: str, what: str) -> BlockExistsError:
    if held == DELETED:
        return BlockExistsError(
            f"a deleted block {label!r} keeps that label (and its history): undo its delete, or use"
            f" another label; {what}"
        )
    return BlockExistsError(f"a block {label!r} already exists; {what}")


def create(d: Dialect, owner: str, f: Fields, editor: str, run_id: str) -> Plan[StoredBlock]:
    """A new block owned by ``owner`` (``''``: shared), at version 1; or, when the owner's block
    of that label was deleted, that block started again (its attachments dropped), its history
    going on."""
    what = f"{owner or 'shared'} block {f.label!r} was not created"
    held = yield from clash(d, owner, f.label)
    if held == DELETED:
        own = yield from lookup(d, owner, f.label, lock=True, deleted=True)
        if own is not None and own.gone and own.block.agent_id == owner:
            yield Execute("DELETE FROM memory_block_agents WHERE block_id = ?", (own.id,))
            held = yield from clash(d, owner, f.label, own.id)
            if held is None:
                old = msgspec.structs.replace(own.block, attached=())
                return (yield from record(d, own.id, old, owner, "create", f, editor, run_id, None, None))
    if held is not None:
        raise taken(f.label, held, what)
    block_id = uuid4().hex
    return (yield from record(d, block_id, None, owner, "create", f, editor, run_id, None, None))


def write(
    d: Dialect,
    agent_id: str,
    label: str,
    action: str,
    change: Callable[[StoredBlock], Fields],
    expected: int | None,
    editor: str,
    run_id: str,
) -> Plan[StoredBlock]:
    """``change`` applied to the block ``label`` as ``agent_id`` sees it, as a new version."""
    found = yield from must(d, agent_id, label)
    old = found.block
    if expected is not None and expected != old.version:
        raise StaleVersionError(
            f"block {label!r} is at version {old.version}, not {expected}: read it again and redo the edit"
        )
    new = change(old)
    if old.read_only and action not in ("update", "rename"):
        raise ReadOnlyBlockError(f"block {label!r} is read-only; nothing was written")
    check_value(new.label, new.value, new.limit)
    if new.label != old.label:
        held = yield from clash(d, old.agent_id, new.label, found.id)
        if held is not None:
            raise taken(new.label, held, f"block {label!r} was not renamed")
    return (yield from record(d, found.id, old, old.agent_id, action, new, editor, run_id, old.version, None))


def attach(d: Dialect, label: str, agent_id: str) -> Plan[StoredBlock]:
    """Make the shared block ``label`` visible to ``agent_id``."""
    found = yield from must(d, SHARED, label)
    if (yield from clash(d, agent_id, label, found.id)):
        raise BlockExistsError(f"agent {agent_id!r} already has a block {label!r}")
    yield Execute(
        "INSERT INTO memory_block_agents (block_id, agent_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (found.id, agent_id),
    )
    again = yield from lookup(d, SHARED, label)
    assert again is not None
    return again.block


def detach(d: Dialect, label: str, agent_id: str) -> Plan[bool]:
    """Stop showing the shared block ``label`` to ``agent_id``; whether it was attached."""
    found = yield from must(d, SHARED, label)
    gone = yield Value(
        "DELETE FROM memory_block_agents WHERE block_id = ? AND agent_id = ? RETURNING 1",
        (found.id, agent_id),
    )
    return gone is not None


def _listing(d: Dialect, where: str, args: tuple[Any, ...]) -> Plan[list[StoredBlock]]:
    rows = yield Rows(
        f"SELECT {_COLS} FROM {_FROM} WHERE v.action <> '{DELETED}' AND ({where})"
        f" ORDER BY CASE WHEN b.agent_id = '' THEN 1 ELSE 0 END, {d.by_code_point('b.label')},"
        f" {d.by_code_point('b.agent_id')}",
        args,
    )
    links = yield from _attached(d, [str(r[0]) for r in rows if not str(r[7])])  # shared ones only
    return [_block(r, links.get(str(r[0]), ())) for r in rows]


def blocks_of(d: Dialect, agent_id: str | None) -> Plan[list[StoredBlock]]:
    """The blocks ``agent_id`` sees, its own first, by label (None: every block)."""
    if agent_id is None:
        return (yield from _listing(d, "1 = 1", ()))
    return (yield from _listing(d, _VISIBLE, (agent_id, agent_id)))


def holds_words(block: StoredBlock, lowered: list[str]) -> bool:
    """Whether the block's value, label or description holds each of the ``lowered`` words, in
    any case (the rule of :func:`search`, also the in-memory store's)."""
    return all(any(w in t.lower() for t in (block.value, block.label, block.description)) for w in lowered)


def search(d: Dialect, words: list[str], agent_id: str | None) -> Plan[list[StoredBlock]]:
    """The blocks whose label, description or value hold every word (case-insensitive). Values
    sealed on the server, or a word beyond ASCII (SQL's LOWER may fold A-Z only), are matched
    here, over the blocks seen."""
    sealed = yield from d.sealing()
    if sealed or not all(w.isascii() for w in words):
        seen = yield from blocks_of(d, agent_id)
        lowered = [w.lower() for w in words]
        return [b for b in seen if holds_words(b, lowered)]
    where = " AND ".join(
        "(LOWER(b.value) LIKE ? ESCAPE '\\' OR LOWER(b.label) LIKE ? ESCAPE '\\'"
        " OR LOWER(b.description) LIKE ? ESCAPE '\\')"
        for _ in words
    )
    args: list[Any] = []
    for w in words:
        pattern = "%" + w.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        args += [pattern, pattern, pattern]
    if agent_id is not None:
        where = f"{where} AND {_VISIBLE}"
        args += [agent_id, agent_id]
    return (yield from _listing(d, where or "1 = 1", tuple(args)))
