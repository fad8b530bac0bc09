"""Memory blocks: labelled, versioned text an agent keeps in its context window and edits itself
(Letta's core memory), in the same database as its sessions.

- :class:`MemoryBlock` is what you create; :class:`StoredBlock` a block as stored; :class:`BlockVersion`
  one entry of its history.
- :class:`BlockStore` is every operation, written once over the backends' runners; open one with
  ``db.memory_stores().blocks()`` on any database the registry opens, or
  ``axio_context_sqlite.memory.SQLiteBlockStore(conn)`` /
  ``axio_context_postgres.memory.PostgresBlockStore(pool)``.
- :func:`memory_tools` gives an agent Letta's tools (``memory_insert``, ``memory_replace``,
  ``memory_rethink``, ``memory``) as plain async functions.
- :func:`render_blocks` is the system message's format (see :mod:`.prompt`).
"""

from __future__ import annotations

from .errors import (
    BlockError,
    BlockExistsError,
    BlockInputError,
    BlockLimitError,
    BlockNotFoundError,
    NothingToUndoError,
    ReadOnlyBlockError,
    StaleVersionError,
)
from .model import DEFAULT_LIMIT, MAX_LABEL, SHARED, BlockVersion, MemoryBlock, StoredBlock
from .prompt import render_blocks, with_blocks
from .store import BlockStore
from .tools import memory_tools

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LABEL",
    "SHARED",
    "BlockError",
    "BlockExistsError",
    "BlockInputError",
    "BlockLimitError",
    "BlockNotFoundError",
    "BlockStore",
    "BlockVersion",
    "MemoryBlock",
    "NothingToUndoError",
    "ReadOnlyBlockError",
    "StaleVersionError",
    "StoredBlock",
    "memory_tools",
    "render_blocks",
    "with_blocks",
]
