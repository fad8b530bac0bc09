"""Memory blocks in memory: :class:`InMemoryBlockStore`, the same :class:`~.store.BlockStore` (every
check, edit and refusal of its calls is that class's) over a runner that keeps the blocks in this
process instead of a database, for tests and for agents that need no file. It passes the same
contract suite as the SQL backends (:class:`~.contract.MemoryBlockContract`).

Each of the store's plans (:mod:`.blocks_sql`, :mod:`.history_sql`, :mod:`.transfer_sql`) has
its counterpart here over :class:`~.transfer_sql.BlockRow` s, the form a block is dumped in: the
block's current fields, every version and the agents a shared block is shown to. A call runs
whole between two awaits, so it is one transaction; it checks everything before it changes
anything, so a refusal leaves nothing half-written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, cast
from uuid import uuid4

import msgspec

from axio_context.sql import Dialect
from axio_context.sql.plan import PlanFn
from axio_context.transcript.times import format_time

from . import blocks_sql, history_sql, transfer_sql
from .blocks_sql import DELETED, Fields, taken
from .errors import (
    BlockExistsError,
    BlockNotFoundError,
    NothingToUndoError,
    ReadOnlyBlockError,
    StaleVersionError,
)
from .model import SHARED, BlockVersion, StoredBlock, check_value
from .store import BlockStore
from .transfer_sql import BlockRow, BlockVersionRow

__all__ = ["InMemoryBlockStore"]

T = TypeVar("T")


class _Found(NamedTuple):
    id: str
    block: StoredBlock
    gone: bool


def _now() -> int:
    return time.time_ns() // 1_000_000


def _current(row: BlockRow) -> BlockVersionRow:
    return next(v for v in row.versions if v.version == row.version)


def _gone(row: BlockRow) -> bool:
    return _current(row).action == DELETED


class _Blocks:
    """The runner: each plan function the store calls, answered over the blocks kept here."""

    def __init__(self) -> None:
        self._rows: dict[str, BlockRow] = {}
        self._ops: dict[Callable[..., Any], Callable[..., Any]] = {
            blocks_sql.lookup: self.op_lookup,
            blocks_sql.blocks_of: self.op_blocks_of,
            blocks_sql.search: self.op_search,
            blocks_sql.create: self.op_create,
            blocks_sql.write: self.op_write,
            blocks_sql.attach: self.op_attach,
            blocks_sql.detach: self.op_detach,
            history_sql.step_back: self.op_step_back,
            history_sql.delete: self.op_delete,
            history_sql.history: self.op_history,
            transfer_sql.dump_blocks: self.op_dump,
            transfer_sql.load_blocks: self.op_load,
        }

    @property
    def dialect(self) -> Dialect:
        """No SQL runs here; the base dialect, for a caller that asks."""
        return Dialect()

    def _call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        op = self._ops.get(fn)
        if op is None:
            raise NotImplementedError(f"the in-memory block store has no {fn.__qualname__}")
        return op(*args, **kwargs)

    async def read(self, fn: PlanFn[..., T], /, *args: Any, **kwargs: Any) -> T:
        return cast(T, self._call(fn, args, kwargs))

    async def write(self, fn: PlanFn[..., T], /, *args: Any, **kwargs: Any) -> T:
        return cast(T, self._call(fn, args, kwargs))

    # -- reading -----------------------------------------------------------------------------------

    def _stored(self, row: BlockRow) -> StoredBlock:
        v = _current(row)
        return StoredBlock(
            label=row.label,
            value=row.value,
            limit=row.char_limit,
            description=row.description,
            read_only=row.read_only,
            version=row.version,
            agent_id=row.agent_id,
            updated_at=format_time(row.updated_at),
            updated_by=v.agent_id,
            run_id=v.run_id,
            attached=() if row.agent_id else row.agents,
        )

    @staticmethod
    def _sees(row: BlockRow, agent_id: str) -> bool:
        return row.agent_id == agent_id or agent_id in row.agents

    def op_lookup(
        self, agent_id: str, label: str, lock: bool = False, deleted: bool = False
    ) -> _Found | None:
        seen = [r for r in self._rows.values() if r.label == label and self._sees(r, agent_id)]
        if not seen:
            return None
        row = min(seen, key=lambda r: r.agent_id == SHARED)  # its own first
        gone = _gone(row)
        return None if gone and not deleted else _Found(row.id, self._stored(row), gone)

    def _must(self, agent_id: str, label: str, deleted: bool = False) -> _Found:
        found = self.op_lookup(agent_id, label, deleted=deleted)
        if found is None:
            raise BlockNotFoundError.of(label, agent_id)
        return found

    def op_blocks_of(self, agent_id: str | None) -> list[StoredBlock]:
        rows = [
            r for r in self._rows.values() if not _gone(r) and (agent_id is None or self._sees(r, agent_id))
        ]
        rows.sort(key=lambda r: (r.agent_id == SHARED, r.label, r.agent_id))
        return [self._stored(r) for r in rows]

    def op_search(self, words: list[str], agent_id: str | None) -> list[StoredBlock]:
        lowered = [w.lower() for w in words]
        return [b for b in self.op_blocks_of(agent_id) if blocks_sql.holds_words(b, lowered)]

    def op_history(self, agent_id: str, label: str) -> list[BlockVersion]:
        row = self._rows[self._must(agent_id, label, deleted=True).id]
        return [
            BlockVersion(
                version=v.version,
                action=v.action,
                label=v.label,
                value=v.value,
                limit=v.char_limit,
                description=v.description,
                read_only=v.read_only,
                created_at=format_time(v.created_at),
                agent_id=v.agent_id,
                run_id=v.run_id,
            )
            for v in row.versions
        ]

    def op_dump(self) -> list[BlockRow]:
        return [self._rows[k] for k in sorted(self._rows)]

    # -- writing -----------------------------------------------------------------------------------

    def _clash(self, owner: str, label: str, block_id: str = "") -> str | None:
        """As :func:`.blocks_sql.clash`: the last action of another block holding ``label`` among
        those the owner's agents see (a live one named first), or None."""
        row = self._rows.get(block_id)
        agents = set(row.agents) if row is not None else set()
        held = [
            r
            for r in self._rows.values()
            if r.label == label
            and r.id != block_id
            and (
                r.agent_id == owner
                or owner in r.agents
                or r.agent_id in agents
                or (r.agent_id == SHARED and bool(agents & set(r.agents)))
            )
        ]
        if not held:
            return None
        return min((_current(r).action for r in held), key=lambda a: a == DELETED)

    def _record(
        self,
        block_id: str,
        old: BlockRow | None,
        owner: str,
        action: str,
        f: Fields,
        editor: str,
        run_id: str,
        undo_to: int | None,
        redo_to: int | None,
        agents: tuple[str, ...] | None = None,
    ) -> StoredBlock:
        now = _now()
        version = 1 if old is None else old.version + 1
        entry = BlockVersionRow(
            version, action, f.label, f.value, f.limit, f.description, f.read_only,
            undo_to, redo_to, editor, run_id, now,
        )  # fmt: skip
        self._rows[block_id] = BlockRow(
            block_id, owner, f.label, f.value, f.limit, f.description, f.read_only, version,
            now if old is None else old.created_at, now,
            (*(() if old is None else old.versions), entry),
            (() if old is None else old.agents) if agents is None else agents,
        )  # fmt: skip
        return self._stored(self._rows[block_id])

    def op_create(self, owner: str, f: Fields, editor: str, run_id: str) -> StoredBlock:
        what = f"{owner or 'shared'} block {f.label!r} was not created"
        held = self._clash(owner, f.label)
        if held == DELETED:
            own = self.op_lookup(owner, f.label, deleted=True)
            if own is not None and own.gone and own.block.agent_id == owner:
                row = msgspec.structs.replace(self._rows[own.id], agents=())
                held = self._clash_without(row, owner, f.label)
                if held is None:
                    return self._record(own.id, row, owner, "create", f, editor, run_id, None, None, ())
        if held is not None:
            raise taken(f.label, held, what)
        return self._record(uuid4().hex, None, owner, "create", f, editor, run_id, None, None)

    def _clash_without(self, row: BlockRow, owner: str, label: str) -> str | None:
        """The clash as if ``row`` (a deleted block about to start again) had no attachments."""
        kept = self._rows[row.id]
        self._rows[row.id] = row
        try:
            return self._clash(owner, label, row.id)
        finally:
            self._rows[row.id] = kept

    def op_write(
        self,
        agent_id: str,
        label: str,
        action: str,
        change: Callable[[StoredBlock], Fields],
        expected: int | None,
        editor: str,
        run_id: str,
    ) -> StoredBlock:
        found = self._must(agent_id, label)
        old = found.block
        if expected is not None and expected != old.version:
            raise StaleVersionError(
                f"block {label!r} is at version {old.version}, not {expected}:"
                " read it again and redo the edit"
            )
        new = change(old)
        if old.read_only and action not in ("update", "rename"):
            raise ReadOnlyBlockError(f"block {label!r} is read-only; nothing was written")
        check_value(new.label, new.value, new.limit)
        if new.label != old.label:
            held = self._clash(old.agent_id, new.label, found.id)
            if held is not None:
                raise taken(new.label, held, f"block {label!r} was not renamed")
        row = self._rows[found.id]
        return self._record(found.id, row, old.agent_id, action, new, editor, run_id, old.version, None)

    def op_step_back(
        self, agent_id: str, label: str, redo: bool, expected: int | None, editor: str, run_id: str
    ) -> StoredBlock:
        found = self._must(agent_id, label, deleted=True)
        old = found.block
        if expected is not None and expected != old.version:
            raise StaleVersionError(
                f"block {label!r} is at version {old.version}, not {expected}: read it again"
            )
        if old.read_only:
            raise ReadOnlyBlockError(f"block {label!r} is read-only; nothing was written")
        row = self._rows[found.id]
        marks = _current(row)
        target_no = marks.redo_to if redo else marks.undo_to
        if target_no is None:
            raise NothingToUndoError(f"block {label!r} has nothing to {'redo' if redo else 'undo'}")
        t = next(v for v in row.versions if v.version == target_no)
        f = Fields(t.label, t.value, t.char_limit, t.description, t.read_only)
        undo_to, redo_to = (old.version, t.redo_to) if redo else (t.undo_to, old.version)
        action = DELETED if t.action == DELETED else "redo" if redo else "undo"
        if f.label != old.label or (found.gone and action != DELETED):
            held = self._clash(old.agent_id, f.label, found.id)
            if held is not None:
                raise taken(f.label, held, f"block {label!r} was not {'redone' if redo else 'undone'}")
        return self._record(found.id, row, old.agent_id, action, f, editor, run_id, undo_to, redo_to)

    def op_delete(
        self, agent_id: str, label: str, expected: int | None, editor: str, run_id: str
    ) -> StoredBlock:
        found = self._must(agent_id, label)
        old = found.block
        if expected is not None and expected != old.version:
            raise StaleVersionError(f"block {label!r} is at version {old.version}, not {expected}")
        if old.read_only:
            raise ReadOnlyBlockError(f"block {label!r} is read-only; it was not deleted")
        f = Fields(old.label, old.value, old.limit, old.description, old.read_only)
        self._record(
            found.id, self._rows[found.id], old.agent_id, DELETED, f, editor, run_id, old.version, None
        )
        return old

    def op_attach(self, label: str, agent_id: str) -> StoredBlock:
        found = self._must(SHARED, label)
        if self._clash(agent_id, label, found.id) is not None:
            raise BlockExistsError(f"agent {agent_id!r} already has a block {label!r}")
        row = self._rows[found.id]
        if agent_id not in row.agents:
            row = msgspec.structs.replace(row, agents=tuple(sorted((*row.agents, agent_id))))
            self._rows[found.id] = row
        return self._stored(row)

    def op_detach(self, label: str, agent_id: str) -> bool:
        found = self._must(SHARED, label)
        row = self._rows[found.id]
        if agent_id not in row.agents:
            return False
        self._rows[found.id] = msgspec.structs.replace(
            row, agents=tuple(a for a in row.agents if a != agent_id)
        )
        return True

    def op_load(self, rows: Sequence[BlockRow], replace: bool = False) -> list[bool]:
        done: list[bool] = []
        for row in rows:
            there = next(
                (
                    r.id
                    for r in self._rows.values()
                    if r.id == row.id or (r.agent_id, r.label) == (row.agent_id, row.label)
                ),
                None,
            )
            if there is not None:
                if not replace:
                    done.append(False)
                    continue
                del self._rows[there]
            self._rows[row.id] = msgspec.structs.replace(row, agents=tuple(sorted(row.agents)))
            done.append(True)
        return done


class InMemoryBlockStore(BlockStore):
    """Versioned memory blocks kept in this process (lost when it ends): the same calls, checks
    and refusals as a database's :class:`~.store.BlockStore`."""

    def __init__(self) -> None:
        super().__init__(_Blocks())
