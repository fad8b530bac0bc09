"""The named errors of memory blocks: each is raised before anything is written, and its message
is one line a person (or a model, through the tools) can act on."""

from __future__ import annotations

from axio_context.errors import AxioContextError

__all__ = [
    "BlockError",
    "BlockExistsError",
    "BlockInputError",
    "BlockLimitError",
    "BlockNotFoundError",
    "NothingToUndoError",
    "ReadOnlyBlockError",
    "StaleVersionError",
]


class BlockError(AxioContextError):
    """Base class of the memory blocks' errors."""


class BlockInputError(BlockError, ValueError):
    """A bad argument: an empty or too long label, a limit below one, text an edit cannot apply."""


class BlockLimitError(BlockError, ValueError):
    """A value longer than its block's character limit."""


class ReadOnlyBlockError(BlockError, PermissionError):
    """A write to the value of a block marked read-only."""


class BlockNotFoundError(BlockError, LookupError):
    """No block with that label is visible to that agent."""

    @classmethod
    def of(cls, label: str, agent_id: str) -> BlockNotFoundError:
        """The error naming the label and whose blocks were looked in."""
        if agent_id:
            return cls(f"no block {label!r} of agent {agent_id!r}")
        return cls(f"no shared block {label!r} (give --agent, or agent_id, for an agent's own)")


class BlockExistsError(BlockError, ValueError):
    """A block with that label is already visible to that agent."""


class StaleVersionError(BlockError):
    """A write naming a version other than the block's current one: someone wrote in between."""


class NothingToUndoError(BlockError, LookupError):
    """An undo at the block's first version, or a redo with nothing undone."""
