"""Context queues and pools (pygents' names and semantics), in memory.

:class:`ContextQueue` is a bounded window of the newest :class:`ContextItem`\\ s;
:class:`ContextPool` holds items by id. Both branch into independent children, fire hooks
(:class:`ContextQueueHook`, :class:`ContextPoolHook`) and round-trip through ``to_dict`` /
``from_dict`` with their hooks stored by name (:class:`HookRegistry`). The persisted versions
are written once in :mod:`.sql` for every SQL backend; one contract suite (:mod:`.testing`) runs
against all of them.
"""

from .errors import (
    ContentEncodeError,
    ContextPoolError,
    PoolConfigError,
    PoolExistsError,
    PoolKindError,
    PoolNotFoundError,
    UnregisteredHookError,
    UnserializableHookError,
)
from .hooks import ContextPoolHook, ContextQueueHook, Hook, HookRegistry, HookType, hook
from .items import ContextItem
from .pool import ContextPool
from .queue import ContextQueue

__all__ = [
    "ContentEncodeError",
    "ContextItem",
    "ContextPool",
    "ContextPoolError",
    "ContextPoolHook",
    "ContextQueue",
    "ContextQueueHook",
    "Hook",
    "HookRegistry",
    "HookType",
    "PoolConfigError",
    "PoolExistsError",
    "PoolKindError",
    "PoolNotFoundError",
    "UnregisteredHookError",
    "UnserializableHookError",
    "hook",
]
