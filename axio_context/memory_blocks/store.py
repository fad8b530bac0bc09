"""The memory blocks of one database: :class:`BlockStore`, written once over a
:class:`~axio_context.sql.Runner` (each backend only gives the runner; see
``axio_context_sqlite.memory.blocks`` and ``axio_context_postgres.memory.blocks``).

Every call is one transaction. ``agent_id`` says whose blocks a call sees: the agent's own and
the shared ones attached to it (``""``: the shared blocks themselves); it is also who a change is
recorded as made by, unless ``by`` names another. ``run_id`` defaults to the current run
(:data:`axio_context.agents.variables.current_run_id`). A write may name the version it read
(``expected_version``): if the block moved on since, it is refused with
:class:`~.errors.StaleVersionError` and nothing is written, so two writers never lose an update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

from axio_context.agents.variables import current_run_id
from axio_context.sql import Runner
from axio_context.transcript.times import epoch_ms, parse_time

from . import blocks_sql as plans
from . import history_sql
from .editing import appended, diff_text, inserted, replaced
from .errors import BlockInputError, BlockNotFoundError
from .model import (
    SHARED,
    BlockVersion,
    MemoryBlock,
    StoredBlock,
    check_agent,
    check_label,
    check_limit,
    check_text,
)
from .model import check_value as _check_value
from .records import BlockRecordChecker
from .transfer_sql import BlockRow, dump_blocks, load_blocks

__all__ = ["BlockStore"]


def _fields(b: StoredBlock) -> plans.Fields:
    return plans.Fields(b.label, b.value, b.limit, b.description, b.read_only)


def _set(value: str, b: StoredBlock) -> plans.Fields:
    return _fields(b)._replace(value=value)


def _append(text: str, b: StoredBlock) -> plans.Fields:
    return _fields(b)._replace(value=appended(b.value, text))


def _insert(text: str, line: int, b: StoredBlock) -> plans.Fields:
    return _fields(b)._replace(value=inserted(b.label, b.value, text, line))


def _replace(old: str, new: str, b: StoredBlock) -> plans.Fields:
    return _fields(b)._replace(value=replaced(b.label, b.value, old, new))


def _update(
    description: str | None, limit: int | None, read_only: bool | None, b: StoredBlock
) -> plans.Fields:
    f = _fields(b)
    return f._replace(
        description=f.description if description is None else description,
        limit=f.limit if limit is None else limit,
        read_only=f.read_only if read_only is None else read_only,
    )


def _rename(label: str, b: StoredBlock) -> plans.Fields:
    return _fields(b)._replace(label=label)


class BlockStore:
    """Versioned memory blocks in a SQL database (the backend gives the runner), safe across
    processes and, on a server, hosts."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner

    def _who(self, agent_id: str, by: str | None, run_id: str | None) -> tuple[str, str, str]:
        agent = check_agent(agent_id)
        editor = agent if by is None else check_agent(by, "by")
        run = (current_run_id.get() or "") if run_id is None else check_agent(run_id, "run_id")
        return agent, editor, run

    @staticmethod
    def _expected(expected_version: int | None) -> int | None:
        """The version a write names, checked (``True`` equals 1 and ``3.0`` equals 3 in Python:
        compared as they came, they would let a write through)."""
        if expected_version is not None and (
            isinstance(expected_version, bool) or not isinstance(expected_version, int)
        ):
            raise BlockInputError(f"expected_version must be a whole number, got {expected_version!r}")
        return expected_version

    async def create(
        self, block: MemoryBlock, *, agent_id: str = SHARED, by: str | None = None, run_id: str | None = None
    ) -> StoredBlock:
        """Store a new block owned by ``agent_id`` (``""``: a shared block), at version 1."""
        if not isinstance(block, MemoryBlock):
            raise BlockInputError(f"create takes a MemoryBlock, got {type(block).__name__}")
        owner, editor, run = self._who(agent_id, by, run_id)
        label = check_label(block.label)
        limit = check_limit(block.limit)
        value = _check_value(label, block.value, limit)
        description = check_text(block.description, "a block description")
        fields = plans.Fields(label, value, limit, description, bool(block.read_only))
        return await self._runner.write(plans.create, owner, fields, editor, run)

    async def get(self, label: str, *, agent_id: str = SHARED) -> StoredBlock:
        """The block ``label`` as ``agent_id`` sees it (BlockNotFoundError when there is none)."""
        block = await self.find(label, agent_id=agent_id)
        if block is None:
            raise BlockNotFoundError.of(label, agent_id)
        return block

    async def find(self, label: str, *, agent_id: str = SHARED) -> StoredBlock | None:
        """The block ``label`` as ``agent_id`` sees it, or None."""
        found = await self._runner.read(plans.lookup, check_agent(agent_id), check_label(label))
        return None if found is None else found.block

    async def list_blocks(self, *, agent_id: str | None = SHARED) -> list[StoredBlock]:
        """The blocks ``agent_id`` sees (its own first, then shared ones attached), by label;
        None: every block in the database."""
        return await self._runner.read(plans.blocks_of, None if agent_id is None else check_agent(agent_id))

    async def _write(
        self,
        label: str,
        action: str,
        change: Callable[[StoredBlock], plans.Fields],
        agent_id: str,
        expected_version: int | None,
        by: str | None,
        run_id: str | None,
    ) -> StoredBlock:
        agent, editor, run = self._who(agent_id, by, run_id)
        expected = self._expected(expected_version)
        return await self._runner.write(
            plans.write, agent, check_label(label), action, change, expected, editor, run
        )

    async def set(
        self,
        label: str,
        value: str,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Replace the block's whole value (Letta's ``memory_rethink``)."""
        text = check_text(value, "a block value")
        return await self._write(label, "set", partial(_set, text), agent_id, expected_version, by, run_id)

    async def append(
        self,
        label: str,
        text: str,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Add ``text`` on a new line at the end of the block."""
        text = check_text(text, "the text to append")
        return await self._write(
            label, "append", partial(_append, text), agent_id, expected_version, by, run_id
        )

    async def insert(
        self,
        label: str,
        text: str,
        line: int = -1,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Insert ``text`` after line ``line`` (0: at the top; -1: at the end; Letta's ``memory_insert``)."""
        text = check_text(text, "the text to insert")
        change = partial(_insert, text, line)
        return await self._write(label, "insert", change, agent_id, expected_version, by, run_id)

    async def replace(
        self,
        label: str,
        old: str,
        new: str,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Replace the one occurrence of ``old`` by ``new`` (Letta's ``memory_replace``: none, or
        several, is a :class:`~.errors.BlockInputError`)."""
        change = partial(_replace, check_text(old, "old text"), check_text(new, "new text"))
        return await self._write(label, "replace", change, agent_id, expected_version, by, run_id)

    async def update(
        self,
        label: str,
        *,
        description: str | None = None,
        limit: int | None = None,
        read_only: bool | None = None,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Change the block's description, limit or read-only flag (allowed on a read-only block,
        so a person can lift the flag); a limit below the value's length is refused."""
        if description is not None:
            check_text(description, "a block description")
        if limit is not None:
            check_limit(limit)
        if read_only is not None and not isinstance(read_only, bool):
            raise BlockInputError(f"read_only must be True or False, got {read_only!r}")
        change = partial(_update, description, limit, read_only)
        return await self._write(label, "update", change, agent_id, expected_version, by, run_id)

    async def rename(
        self,
        label: str,
        new_label: str,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Give the block another label; its history goes with it."""
        change = partial(_rename, check_label(new_label))
        return await self._write(label, "rename", change, agent_id, expected_version, by, run_id)

    async def undo(
        self,
        label: str,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Restore the block's fields before its last change, as a new version (the value, the
        description, the limit, the flag and the label; an undone delete brings the block back).
        A label another block took since is refused (BlockExistsError) and nothing is written."""
        return await self._step(label, False, agent_id, expected_version, by, run_id)

    async def redo(
        self,
        label: str,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Restore what the last undo took back, as a new version."""
        return await self._step(label, True, agent_id, expected_version, by, run_id)

    async def _step(
        self,
        label: str,
        redo: bool,
        agent_id: str,
        expected_version: int | None,
        by: str | None,
        run_id: str | None,
    ) -> StoredBlock:
        agent, editor, run = self._who(agent_id, by, run_id)
        expected = self._expected(expected_version)
        return await self._runner.write(
            history_sql.step_back, agent, check_label(label), redo, expected, editor, run
        )

    async def delete(
        self,
        label: str,
        *,
        agent_id: str = SHARED,
        expected_version: int | None = None,
        by: str | None = None,
        run_id: str | None = None,
    ) -> StoredBlock:
        """Delete the block (refused on a read-only block); the block as it was. The delete is a
        version of its own: ``history`` still lists the block's versions, ``undo`` brings it
        back, and a ``create`` of its label by its owner starts it again, its history going on."""
        agent, editor, run = self._who(agent_id, by, run_id)
        expected = self._expected(expected_version)
        return await self._runner.write(history_sql.delete, agent, check_label(label), expected, editor, run)

    async def attach(self, label: str, agent_id: str) -> StoredBlock:
        """Show the shared block ``label`` to ``agent_id`` too (refused if it has that label)."""
        return await self._runner.write(plans.attach, check_label(label), check_agent(agent_id))

    async def detach(self, label: str, agent_id: str) -> bool:
        """Stop showing the shared block ``label`` to ``agent_id``; whether it was shown."""
        return await self._runner.write(plans.detach, check_label(label), check_agent(agent_id))

    async def history(self, label: str, *, agent_id: str = SHARED) -> list[BlockVersion]:
        """Every version of the block, oldest first (who, when, which run, the fields after it)."""
        return await self._runner.read(history_sql.history, check_agent(agent_id), check_label(label))

    async def diff(self, label: str, a: int, b: int | None = None, *, agent_id: str = SHARED) -> str:
        """A unified diff of the block's value from version ``a`` to ``b`` (None: the current one)."""
        versions = {v.version: v for v in await self.history(label, agent_id=agent_id)}
        last = max(versions)
        b = last if b is None else b
        for n in (a, b):
            if n not in versions:
                raise BlockInputError(f"block {label!r} has versions 1 to {last}, not {n}")
        return diff_text(label, versions[a].value, versions[b].value, a, b)

    async def search(
        self, text: str, *, agent_id: str | None = None, since: datetime | None = None
    ) -> list[StoredBlock]:
        """The blocks whose label, description or value hold every word of ``text`` (any case);
        ``agent_id``: only the blocks it sees; ``since``: only those changed since."""
        words = check_text(text, "a search").split()
        if not words:
            raise BlockInputError("a block search needs at least one word")
        agent = None if agent_id is None else check_agent(agent_id)
        found = await self._runner.read(plans.search, words, agent)
        after = epoch_ms(since)
        return found if after is None else [b for b in found if parse_time(b.updated_at) >= after]

    async def dump(self) -> list[BlockRow]:
        """Every block with its whole history and attachments (what ``blocks export`` writes)."""
        return await self._runner.read(dump_blocks)

    async def load(self, rows: Sequence[BlockRow], *, replace: bool = False) -> list[bool]:
        """Write dumped blocks back as they were, in one transaction; for each, whether it was
        written (a block with its id, or owner and label, is kept unless ``replace``). The rows
        are untrusted (a file): each is held to what the store allows first, and none twice
        (:class:`~.records.BlockRecordChecker`; BlockInputError naming ``$[i]`` and the field)."""
        checker = BlockRecordChecker()
        checked = [checker.check(row, f"$[{i}]") for i, row in enumerate(rows)]
        return await self._runner.write(load_blocks, checked, replace)
