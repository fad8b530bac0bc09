"""Hooks of context queues and pools, pygents' way: typed async callables, a name registry.

A hook is an async function wrapped in :class:`Hook` with the event type(s) it answers. It
belongs to one queue or pool (``@queue.before_append``, ``queue.hooks.append(h)``) or fires for
every one (``@hook(ContextQueueHook.ON_EVICT)``, optionally only for owners sharing one of its
``tags``). :class:`HookRegistry` keeps every hook by its function's name, which is how
``to_dict`` stores an owner's hooks and ``from_dict`` finds them again.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from enum import Enum, StrEnum
from typing import Any, ClassVar

from .errors import UnregisteredHookError, UnserializableHookError

__all__ = [
    "ContextPoolHook",
    "ContextQueueHook",
    "Hook",
    "HookFn",
    "HookRegistry",
    "HookType",
    "hook",
    "rebuild_hooks",
    "serialize_hooks",
]

HookFn = Callable[..., Awaitable[None]]


class ContextQueueHook(StrEnum):
    """Events of a :class:`~axio_context.pools.ContextQueue`."""

    BEFORE_APPEND = "before_append"
    AFTER_APPEND = "after_append"
    BEFORE_CLEAR = "before_clear"
    AFTER_CLEAR = "after_clear"
    ON_EVICT = "on_evict"


class ContextPoolHook(StrEnum):
    """Events of a :class:`~axio_context.pools.ContextPool`."""

    BEFORE_ADD = "before_add"
    AFTER_ADD = "after_add"
    BEFORE_REMOVE = "before_remove"
    AFTER_REMOVE = "after_remove"
    BEFORE_CLEAR = "before_clear"
    AFTER_CLEAR = "after_clear"
    ON_EVICT = "on_evict"


HookType = ContextQueueHook | ContextPoolHook


class Hook:
    """An async callable answering one or more event types; ``lock=True`` runs its calls one at
    a time, ``fixed_kwargs`` are passed to every call (call-time keywords win)."""

    def __init__(
        self,
        fn: HookFn,
        type: HookType | tuple[HookType, ...],
        *,
        lock: bool = False,
        fixed_kwargs: Mapping[str, Any] | None = None,
        tags: Iterable[str] | None = None,
    ) -> None:
        if not asyncio.iscoroutinefunction(fn):
            raise TypeError(f"a hook must be an async function, got {fn!r}")
        self.fn = fn
        self.type = type
        self.lock = asyncio.Lock() if lock else None
        self.fixed_kwargs = dict(fixed_kwargs or {})
        self.tags: frozenset[str] | None = frozenset(tags) if tags else None
        self.__name__: str = getattr(fn, "__name__", "hook")
        functools.update_wrapper(self, fn)

    @property
    def types(self) -> tuple[HookType, ...]:
        """Every event type this hook answers."""
        return self.type if isinstance(self.type, tuple) else (self.type,)

    def answers(self, hook_type: HookType) -> bool:
        """Whether this hook fires for ``hook_type``."""
        return any(t is hook_type for t in self.types)

    async def __call__(self, *args: Any, **kwargs: Any) -> None:
        merged = {**self.fixed_kwargs, **kwargs}
        if self.lock is None:
            await self.fn(*args, **merged)
            return
        async with self.lock:
            await self.fn(*args, **merged)

    def __repr__(self) -> str:
        return f"Hook({self.__name__!r}, type={self.type!r})"


def _types(hook_type: HookType | list[HookType] | tuple[HookType, ...]) -> HookType | tuple[HookType, ...]:
    types = list(hook_type) if isinstance(hook_type, (list, tuple)) else [hook_type]
    if not types:
        raise ValueError("a hook needs at least one type")
    return types[0] if len(types) == 1 else tuple(types)


class HookRegistry:
    """Every hook by name (class-level, as in pygents), and the global hooks that fire for
    every queue or pool. Not meant to be instantiated."""

    _registry: ClassVar[dict[str, Hook]] = {}
    _global_hooks: ClassVar[list[Hook]] = []

    @classmethod
    def register(cls, h: Hook) -> None:
        """Register ``h`` under its name; a different hook under that name is a ValueError."""
        existing = cls._registry.get(h.__name__)
        if existing is not None and existing is not h:
            raise ValueError(f"{h.__name__!r} already registered")
        cls._registry[h.__name__] = h

    @classmethod
    def get(cls, name: str) -> Hook:
        """The hook registered as ``name``; UnregisteredHookError when there is none."""
        found = cls._registry.get(name)
        if found is None:
            raise UnregisteredHookError(f"hook {name!r} not found in the HookRegistry")
        return found

    @classmethod
    def unregister(cls, name: str) -> None:
        """Forget ``name`` and stop that hook firing globally (owners that hold it keep it)."""
        found = cls.get(name)
        del cls._registry[name]
        cls._global_hooks = [h for h in cls._global_hooks if h is not found]

    @classmethod
    def clear(cls) -> None:
        """Forget every hook (for tests)."""
        cls._registry = {}
        cls._global_hooks = []

    @classmethod
    def register_global(cls, h: Hook) -> None:
        """Register ``h`` by name and make it fire for every owner (filtered by its tags)."""
        cls.register(h)
        cls._global_hooks.append(h)

    @classmethod
    def wrap(cls, fn: HookFn | Hook, hook_type: HookType, *, lock: bool = False, **fixed_kwargs: Any) -> Hook:
        """``fn`` as a Hook for one owner: the registered wrapper of ``fn`` if there is one, else
        a new one, registered when its name is free (a second closure of the same name still
        fires, but saving its owner raises UnserializableHookError)."""
        if isinstance(fn, Hook):
            if fn.__name__ not in cls._registry:
                cls.register(fn)
            return fn
        existing = cls._registry.get(getattr(fn, "__name__", ""))
        if existing is not None and existing.fn is fn:
            return existing
        wrapped = Hook(fn, hook_type, lock=lock, fixed_kwargs=fixed_kwargs)
        if existing is None:
            cls.register(wrapped)
        return wrapped

    @classmethod
    async def fire(
        cls, hook_type: HookType, owner_hooks: Iterable[Any], tags: frozenset[str], *args: Any
    ) -> None:
        """Run the owner's hooks for ``hook_type`` in order, then the global ones whose tags
        meet ``tags`` (or that have none); a hook that is both runs once."""
        fired: set[int] = set()
        for h in owner_hooks:
            if _answers(h, hook_type):
                await h(*args)
                fired.add(id(h))
        for h in list(cls._global_hooks):
            if id(h) in fired or not h.answers(hook_type):
                continue
            if h.tags is None or h.tags & tags:
                await h(*args)

    @classmethod
    def wants(cls, hook_type: HookType, owner_hooks: Iterable[Any], tags: frozenset[str]) -> bool:
        """Whether :meth:`fire` would run anything (so a store can skip preparing its arguments)."""
        if any(_answers(h, hook_type) for h in owner_hooks):
            return True
        return any(h.answers(hook_type) and (h.tags is None or h.tags & tags) for h in cls._global_hooks)


def _answers(h: Any, hook_type: HookType) -> bool:
    t = getattr(h, "type", None)
    if isinstance(t, (tuple, frozenset, list)):
        return any(x is hook_type for x in t)
    return t is hook_type


def hook(
    type: HookType | list[HookType],
    *,
    lock: bool = False,
    tags: Iterable[str] | None = None,
    **fixed_kwargs: Any,
) -> Callable[[HookFn], Hook]:
    """Decorator: a global hook for one or more event types, registered by its function's
    name; with ``tags`` it fires only for owners sharing at least one of them."""
    stored = _types(type)

    def decorator(fn: HookFn) -> Hook:
        wrapped = Hook(fn, stored, lock=lock, fixed_kwargs=fixed_kwargs, tags=tags)
        HookRegistry.register_global(wrapped)
        return wrapped

    return decorator


def serialize_hooks(hooks: Iterable[Any]) -> dict[str, list[str]]:
    """``{event: [hook names]}``: how ``to_dict`` stores hooks. A hook that is not the one
    registered under its name cannot be found again by it: UnserializableHookError."""
    out: dict[str, list[str]] = {}
    for h in hooks:
        t = getattr(h, "type", None)
        if t is None:
            continue
        name = getattr(h, "__name__", "hook")
        if HookRegistry._registry.get(name) is not h:
            raise UnserializableHookError(
                f"hook {name!r} is not the one registered under that name (a closure or a duplicate);"
                " define it at module level to save its owner"
            )
        for single in t if isinstance(t, (tuple, frozenset, list)) else (t,):
            out.setdefault(single.value if isinstance(single, Enum) else str(single), []).append(name)
    return out


def rebuild_hooks(data: Mapping[str, Any]) -> list[Hook]:
    """The hooks a ``to_dict`` stored, each once, from the registry (UnregisteredHookError)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"'hooks' must be a mapping of event to hook names, got {data!r:.80}")
    seen: set[str] = set()
    out: list[Hook] = []
    for names in data.values():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"'hooks' must map each event to a list of names, got {names!r:.80}")
        for name in names:
            if name not in seen:
                seen.add(name)
                out.append(HookRegistry.get(name))
    return out
