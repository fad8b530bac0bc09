"""The named errors of context queues and pools.

pygents' ``UnregisteredHookError`` is a ``KeyError`` and its ``UnserializableHookError`` a
``ValueError``; both keep those bases here (code written against pygents catches them the same
way) and are also :class:`~axio_context.errors.AxioContextError`, so the command line reports
them in one line.
"""

from __future__ import annotations

from axio_context.errors import AxioContextError

__all__ = [
    "ContentEncodeError",
    "ContextPoolError",
    "PoolConfigError",
    "PoolExistsError",
    "PoolKindError",
    "PoolNotFoundError",
    "UnregisteredHookError",
    "UnserializableHookError",
]


class ContextPoolError(AxioContextError):
    """Base class of the context queue and pool errors."""


class UnregisteredHookError(ContextPoolError, KeyError):
    """A hook name that is not registered in the HookRegistry."""

    def __str__(self) -> str:  # KeyError would quote the message again
        return str(self.args[0]) if self.args else ""


class UnserializableHookError(ContextPoolError, ValueError):
    """A hook that is not the one registered under its name (a closure or a duplicate)."""


class ContentEncodeError(ContextPoolError, TypeError):
    """An item whose content msgspec cannot encode; nothing of the change was written."""


class PoolNotFoundError(ContextPoolError, LookupError):
    """No queue or pool of that name in the database."""


class PoolExistsError(ContextPoolError, ValueError):
    """A branch or import whose target name is already taken."""


class PoolKindError(ContextPoolError, ValueError):
    """A name that holds a queue opened as a pool, or a pool opened as a queue."""


class PoolConfigError(ContextPoolError, ValueError):
    """A stored queue or pool opened with a limit other than the one it was created with."""
