"""Letta's memory tools for an agent's blocks: :func:`memory_tools` gives ``memory_insert``,
``memory_replace``, ``memory_rethink`` and the path-style ``memory`` command tool, bound to a
store and an agent, as plain async functions with typed signatures and docstrings.

They are usable as they are with openai-agents (``function_tool(fn)``) and pydantic-ai
(``Agent(tools=[...])``). A tool never raises into the framework: a bad call (an unknown label,
a value over the limit, a read-only block, text that is not there) returns one line starting
``Error:`` that says what to do instead, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from axio_context.errors import AxioContextError

from .errors import BlockNotFoundError
from .model import DEFAULT_LIMIT, MemoryBlock, StoredBlock
from .store import BlockStore

__all__ = ["MEMORY_COMMANDS", "memory_tools", "path_label"]

#: The ``memory`` tool's commands.
MEMORY_COMMANDS: Final = ("create", "str_replace", "insert", "delete", "rename")

Tool = Callable[..., Awaitable[str]]


def path_label(path: str) -> str:
    """The label a ``memory`` path names: ``/memories/human`` and ``/human`` are ``human``."""
    text = path.strip()
    for prefix in ("/memories/", "memories/", "/"):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _done(block: StoredBlock, verb: str) -> str:
    return (
        f"Block {block.label!r} {verb}: now version {block.version}"
        f" ({len(block.value)} of {block.limit} characters)."
    )


def _error(exc: Exception) -> str:
    return f"Error: {exc}"


def memory_tools(store: BlockStore, agent_id: str) -> list[Tool]:
    """Letta's four memory tools on ``agent_id``'s blocks in ``store`` (its own and the shared
    ones attached to it); each change is recorded as made by ``agent_id`` in the current run."""

    async def memory_insert(label: str, new_str: str, insert_line: int = -1) -> str:
        """Insert text into a memory block at a given line.

        Args:
            label: The label of the memory block to edit, for example "human" or "persona".
            new_str: The text to insert (may hold several lines).
            insert_line: The line after which to insert (0 inserts at the top, -1 at the end).
        """
        try:
            return _done(await store.insert(label, new_str, insert_line, agent_id=agent_id), "edited")
        except (AxioContextError, ValueError, TypeError) as exc:
            return _error(exc)

    async def memory_replace(label: str, old_str: str, new_str: str) -> str:
        """Replace one exact piece of text in a memory block by new text.

        Args:
            label: The label of the memory block to edit.
            old_str: The text to replace; it must appear exactly once, verbatim.
            new_str: The text to put in its place (empty to delete it).
        """
        try:
            return _done(await store.replace(label, old_str, new_str, agent_id=agent_id), "edited")
        except (AxioContextError, ValueError, TypeError) as exc:
            return _error(exc)

    async def memory_rethink(label: str, new_memory: str) -> str:
        """Rewrite a memory block as a whole, for large reorganisations; creates it if missing.

        Args:
            label: The label of the memory block to rewrite (or create).
            new_memory: The block's complete new text.
        """
        try:
            try:
                return _done(await store.set(label, new_memory, agent_id=agent_id), "rewritten")
            except BlockNotFoundError:
                created = await store.create(MemoryBlock(label, new_memory), agent_id=agent_id)
                return _done(created, "created")
        except (AxioContextError, ValueError, TypeError) as exc:
            return _error(exc)

    async def memory(
        command: str,
        path: str | None = None,
        file_text: str | None = None,
        description: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        insert_text: str | None = None,
        old_path: str | None = None,
        new_path: str | None = None,
    ) -> str:
        """Manage memory blocks by path (/memories/LABEL): create, edit, delete or rename them.

        Args:
            command: One of "create" (path, description, file_text), "str_replace" (path,
                old_str, new_str), "insert" (path, insert_line, insert_text), "delete" (path),
                "rename" (old_path, new_path; or path and description to change the description).
            path: The block's path, for example /memories/human.
            file_text: The text of a new block (create).
            description: What the block is for (create; rename with path).
            old_str: The exact text to replace, which must appear once (str_replace).
            new_str: The text to put in its place (str_replace).
            insert_line: The line after which to insert; 0 is the top, -1 the end (insert).
            insert_text: The text to insert (insert).
            old_path: The block's current path (rename).
            new_path: The block's new path (rename).
        """
        try:
            return await _command(
                store, agent_id, command, path, file_text, description, old_str, new_str,
                insert_line, insert_text, old_path, new_path,
            )  # fmt: skip
        except (AxioContextError, ValueError, TypeError) as exc:
            return _error(exc)

    return [memory_insert, memory_replace, memory_rethink, memory]


def _need(value: str | None, name: str, command: str) -> str:
    if value is None:
        raise ValueError(f"the {command} command needs {name}")
    return value


async def _command(
    store: BlockStore,
    agent_id: str,
    command: str,
    path: str | None,
    file_text: str | None,
    description: str | None,
    old_str: str | None,
    new_str: str | None,
    insert_line: int | None,
    insert_text: str | None,
    old_path: str | None,
    new_path: str | None,
) -> str:
    """The ``memory`` tool's command, carried out (errors raise; the tool turns them into text)."""
    if command == "create":
        label = path_label(_need(path, "path", command))
        new = MemoryBlock(label, file_text or "", limit=DEFAULT_LIMIT, description=description or "")
        return _done(await store.create(new, agent_id=agent_id), "created")
    if command == "str_replace":
        label = path_label(_need(path, "path", command))
        old = _need(old_str, "old_str", command)
        return _done(await store.replace(label, old, new_str or "", agent_id=agent_id), "edited")
    if command == "insert":
        label = path_label(_need(path, "path", command))
        text = _need(insert_text, "insert_text", command)
        line = -1 if insert_line is None else insert_line
        return _done(await store.insert(label, text, line, agent_id=agent_id), "edited")
    if command == "delete":
        label = path_label(_need(path, "path", command))
        gone = await store.delete(label, agent_id=agent_id)
        return f"Block {gone.label!r} deleted."
    if command == "rename":
        if old_path is None and path is not None and description is not None:
            described = await store.update(path_label(path), description=description, agent_id=agent_id)
            return _done(described, "described")
        old = path_label(_need(old_path, "old_path", command))
        target = path_label(_need(new_path, "new_path", command))
        return _done(await store.rename(old, target, agent_id=agent_id), f"renamed from {old!r}")
    raise ValueError(f"unknown command {command!r}: use one of {', '.join(MEMORY_COMMANDS)}")
