"""Memory blocks in the lossless formats (version 2): each block with its whole history, undo
stack and attachments as the :class:`~axio_context.memory_blocks.transfer_sql.BlockRow` that
``blocks export`` writes (times in ms since the epoch). ``json`` holds them in a ``"blocks"``
array after ``"sessions"``; ``jsonl`` in ``block`` lines (``{"kind": "block", "format": ...,
"version": 2, "block": {...}}``) after the sessions. Readers refuse an unknown field in a block
record, and hold every field to what the store allows (:mod:`axio_context.memory_blocks.records`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from ..errors import TranscriptError
from ..memory_blocks.errors import BlockExistsError, BlockInputError
from ..memory_blocks.records import BlockRecordChecker
from ..memory_blocks.transfer_sql import BlockRow, BlockVersionRow, block_key, load_blocks
from ..sql import Dialect, Plan
from .records import SessionRecord

__all__ = [
    "BlockIn",
    "BlockLine",
    "BlockLineIn",
    "Transfer",
    "checked_block",
    "checked_blocks",
    "import_blocks",
    "refuse_clashes",
]


class BlockVersionIn(BlockVersionRow, frozen=True, forbid_unknown_fields=True):
    """A block version as read: an unknown field is an error."""


class BlockIn(BlockRow, frozen=True, forbid_unknown_fields=True):
    """A block record as read: an unknown field is an error."""

    versions: tuple[BlockVersionIn, ...] = ()


class BlockLine(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="block"):
    """A ``jsonl`` block line as written (the block nested: its own ``version`` is its number)."""

    format: str
    version: int
    block: BlockRow


class BlockLineIn(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="block"):
    """A ``jsonl`` block line as read."""

    format: str
    version: int
    block: BlockIn


class Transfer(NamedTuple):
    """What a lossless export holds: its sessions and (version 2) its memory blocks."""

    sessions: list[SessionRecord]
    blocks: list[BlockRow]


def checked_block(checker: BlockRecordChecker, row: BlockRow, where: str) -> BlockRow:
    """``row`` checked (:class:`BlockRecordChecker`); TranscriptError naming the field."""
    try:
        return checker.check(row, where)
    except BlockInputError as exc:
        raise TranscriptError(str(exc)) from None


def checked_blocks(rows: Sequence[BlockRow], where: str) -> list[BlockRow]:
    """Every one of ``rows`` (the array at ``where``) checked, and none twice."""
    checker = BlockRecordChecker()
    return [checked_block(checker, row, f"{where}[{i}]") for i, row in enumerate(rows)]


def refuse_clashes(keys: Sequence[str], source: str) -> None:
    """Refuse an import whose memory blocks are here already (``keys``: their owner/label, from
    :func:`~axio_context.memory_blocks.transfer_sql.clashing_blocks`) before it writes anything."""
    if keys:
        shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
        raise BlockExistsError(
            f"{len(keys)} memory block(s) in {source} already exist ({shown});"
            " use --replace to overwrite them"
        )


def import_blocks(
    d: Dialect, blocks: list[BlockRow], source: str, *, replace: bool, skip_existing: bool = False
) -> Plan[list[str]]:
    """Write an import's memory blocks in the caller's transaction and return the keys written;
    one that appeared since :func:`refuse_clashes` looked is refused (the caller's transaction
    rolls back) unless ``skip_existing``, which leaves it as it is."""
    done = yield from load_blocks(d, blocks, replace)
    if not (skip_existing or all(done)):
        raise BlockExistsError(f"memory blocks of {source} appeared in the database during the import")
    return [block_key(b) for b, written in zip(blocks, done, strict=True) if written]
