"""A memory block's history as plans (see :mod:`.blocks_sql`): undo and redo, the delete that
is a version of its own, and the list of versions."""

from __future__ import annotations

from typing import Any, Final

from axio_context.sql import Dialect, Plan, Row, Rows
from axio_context.transcript.times import format_time

from .blocks_sql import DELETED, Fields, clash, lookup, must, record, taken
from .errors import BlockNotFoundError, NothingToUndoError, ReadOnlyBlockError, StaleVersionError
from .model import BlockVersion, StoredBlock

__all__ = ["delete", "history", "step_back"]

_COLS: Final = (
    "version, action, label, value, char_limit, description, read_only, created_at, agent_id, run_id"
)


def _version(row: Any) -> BlockVersion:
    return BlockVersion(
        version=int(row[0]),
        action=str(row[1]),
        label=str(row[2]),
        value=str(row[3]),
        limit=int(row[4]),
        description=str(row[5]),
        read_only=bool(row[6]),
        created_at=format_time(int(row[7])),
        agent_id=str(row[8]),
        run_id=str(row[9]),
    )


def step_back(
    d: Dialect, agent_id: str, label: str, redo: bool, expected: int | None, editor: str, run_id: str
) -> Plan[StoredBlock]:
    """Undo (or redo) the block's last change, as a new version restoring the fields it had (its
    label too; a delete undone brings the block back, a delete redone deletes it again)."""
    found = yield from lookup(d, agent_id, label, lock=True, deleted=True)
    if found is None:
        raise BlockNotFoundError.of(label, agent_id)
    old = found.block
    if expected is not None and expected != old.version:
        raise StaleVersionError(f"block {label!r} is at version {old.version}, not {expected}: read it again")
    if old.read_only:
        raise ReadOnlyBlockError(f"block {label!r} is read-only; nothing was written")
    marks = yield Row(
        "SELECT undo_to, redo_to FROM memory_block_versions WHERE block_id = ? AND version = ?",
        (found.id, old.version),
    )
    target = None if marks is None else marks[1 if redo else 0]
    if target is None:
        raise NothingToUndoError(f"block {label!r} has nothing to {'redo' if redo else 'undo'}")
    row = yield Row(
        "SELECT value, char_limit, description, read_only, undo_to, redo_to, label, action"
        " FROM memory_block_versions WHERE block_id = ? AND version = ?",
        (found.id, int(target)),
    )
    f = Fields(str(row[6]), str(row[0]), int(row[1]), str(row[2]), bool(row[3]))
    undo_to, redo_to = (old.version, row[5]) if redo else (row[4], old.version)
    action = DELETED if row[7] == DELETED else "redo" if redo else "undo"
    if f.label != old.label or (found.gone and action != DELETED):  # the label comes back in use
        held = yield from clash(d, old.agent_id, f.label, found.id)
        if held is not None:
            raise taken(f.label, held, f"block {label!r} was not {'redone' if redo else 'undone'}")
    return (yield from record(d, found.id, old, old.agent_id, action, f, editor, run_id, undo_to, redo_to))


def delete(
    d: Dialect, agent_id: str, label: str, expected: int | None, editor: str, run_id: str
) -> Plan[StoredBlock]:
    """Delete the block, as a new version (its history and attachments stay, for an undo); the
    block as it was."""
    found = yield from must(d, agent_id, label)
    if expected is not None and expected != found.block.version:
        raise StaleVersionError(f"block {label!r} is at version {found.block.version}, not {expected}")
    if found.block.read_only:
        raise ReadOnlyBlockError(f"block {label!r} is read-only; it was not deleted")
    gone = found.block
    if d.lock_rows:  # the locked read left out the author and run: read them as they were
        full = yield from lookup(d, agent_id, label)
        gone = gone if full is None else full.block
    old = found.block
    f = Fields(old.label, old.value, old.limit, old.description, old.read_only)
    yield from record(d, found.id, old, old.agent_id, DELETED, f, editor, run_id, old.version, None)
    return gone


def history(d: Dialect, agent_id: str, label: str) -> Plan[list[BlockVersion]]:
    """Every version of the block, oldest first (a deleted block's too)."""
    found = yield from lookup(d, agent_id, label, deleted=True)
    if found is None:
        raise BlockNotFoundError.of(label, agent_id)
    rows = yield Rows(
        f"SELECT {_COLS} FROM memory_block_versions WHERE block_id = ? ORDER BY version",
        (found.id,),
    )
    return [_version(r) for r in rows]
