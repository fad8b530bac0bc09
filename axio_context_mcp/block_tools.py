"""The MCP tools over memory blocks (:mod:`axio_context.memory_blocks`): reading them always,
editing them only with ``--allow-write``. Each edit is one call of the shared
:class:`~axio_context.memory_blocks.BlockStore` (so limits, read-only blocks and stale versions are
refused there, with nothing written), recorded as made ``by`` ``"mcp"``."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec

from axio_context.backends import OpenDatabase
from axio_context.memory_blocks import DEFAULT_LIMIT, MemoryBlock

from .tools import Tool

__all__ = ["BLOCK_READ_TOOLS", "BLOCK_WRITE_TOOLS", "EDITOR"]

#: Who an edit through the MCP server is recorded as made by (a block's history shows it).
EDITOR: Final = "mcp"


def _doc(text: str) -> msgspec.Meta:
    return msgspec.Meta(description=text)


Label = Annotated[str, msgspec.Meta(min_length=1, description="The block's label, e.g. persona or human.")]
Agent = Annotated[str, _doc('The agent whose block it is ("": a shared block).')]


class ListBlocks(msgspec.Struct, forbid_unknown_fields=True):
    """The memory blocks with their values (as `axio-context blocks --json`)."""

    agent_id: Annotated[
        str | None, _doc('Only the blocks this agent sees ("": the shared ones; omitted: every block).')
    ] = None
    query: Annotated[
        str | None, _doc("Only blocks whose label, description or value hold every word of this.")
    ] = None


class ShowBlock(msgspec.Struct, forbid_unknown_fields=True):
    """One memory block, and with history every version of it (who, when, which run)."""

    label: Label
    agent_id: Agent = ""
    history: Annotated[bool, _doc("Also every version, oldest first.")] = False


class EditBlock(msgspec.Struct, forbid_unknown_fields=True):
    """Create or change a memory block; every change is a new version (undo takes it back)."""

    label: Label
    action: Annotated[
        Literal["create", "set", "append", "insert", "replace", "undo", "redo"],
        _doc(
            "create: a new block holding text; set: replace the whole value by text; append: text "
            "on a new line at the end; insert: text after line `line`; replace: the one occurrence "
            "of old by new; undo/redo: the last change."
        ),
    ]
    agent_id: Agent = ""
    text: Annotated[str | None, _doc("The text for create, set, append and insert.")] = None
    old: Annotated[str | None, _doc("replace: the text to replace (it must appear exactly once).")] = None
    new: Annotated[str | None, _doc("replace: the text to put in its place.")] = None
    line: Annotated[int, _doc("insert: the line after which to insert (0: the top, -1: the end).")] = -1
    expected_version: Annotated[
        int | None, _doc("The version you read: the edit is refused if the block changed since.")
    ] = None
    limit: Annotated[int, _doc("create: the block's character limit.")] = DEFAULT_LIMIT
    description: Annotated[str, _doc("create: what the block is for.")] = ""
    read_only: Annotated[bool, _doc("create: refuse later edits of its value.")] = False


async def list_blocks(db: OpenDatabase, a: ListBlocks) -> list[Any]:
    """The blocks (those ``agent_id`` sees, or every one), or those matching ``query``."""
    store = db.memory_stores().blocks()
    if a.query is not None:
        found = await store.search(a.query, agent_id=a.agent_id)
    else:
        found = await store.list_blocks(agent_id=a.agent_id)
    return [msgspec.to_builtins(b) for b in found]


async def show_block(db: OpenDatabase, a: ShowBlock) -> dict[str, Any]:
    """The block, and its versions when asked."""
    store = db.memory_stores().blocks()
    out: dict[str, Any] = {"block": msgspec.to_builtins(await store.get(a.label, agent_id=a.agent_id))}
    if a.history:
        out["history"] = [msgspec.to_builtins(v) for v in await store.history(a.label, agent_id=a.agent_id)]
    return out


def _need(value: str | None, name: str, action: str) -> str:
    if value is None:
        raise ValueError(f"{action} needs {name}")
    return value


async def edit_block(db: OpenDatabase, a: EditBlock) -> dict[str, Any]:
    """One change of the block; the block as it is after it."""
    store = db.memory_stores().blocks()
    common: dict[str, Any] = {"agent_id": a.agent_id, "by": EDITOR}
    versioned = {**common, "expected_version": a.expected_version}
    if a.action == "create":
        made = MemoryBlock(
            a.label, a.text or "", limit=a.limit, description=a.description, read_only=a.read_only
        )
        block = await store.create(made, **common)
    elif a.action == "set":
        block = await store.set(a.label, _need(a.text, "text", "set"), **versioned)
    elif a.action == "append":
        block = await store.append(a.label, _need(a.text, "text", "append"), **versioned)
    elif a.action == "insert":
        block = await store.insert(a.label, _need(a.text, "text", "insert"), a.line, **versioned)
    elif a.action == "replace":
        old, new = _need(a.old, "old", "replace"), _need(a.new, "new", "replace")
        block = await store.replace(a.label, old, new, **versioned)
    elif a.action == "undo":
        block = await store.undo(a.label, **versioned)
    else:
        block = await store.redo(a.label, **versioned)
    return {"block": msgspec.to_builtins(block)}


BLOCK_READ_TOOLS: Final = (
    Tool("list_blocks", "List the memory blocks agents keep in their context.", ListBlocks, list_blocks),
    Tool("show_block", "One memory block, optionally with its history.", ShowBlock, show_block),
)

BLOCK_WRITE_TOOLS: Final = (
    Tool("edit_block", "Create or edit a memory block (versioned).", EditBlock, edit_block, writes=True),
)
