"""What the in-memory and the persisted queues and pools share: the hook decorators, the read
side (``items``, ``len``, ``iter``, ``bool``, ``catalogue``), checks and the dict shape."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, Generic, TypeVar

from .hooks import ContextPoolHook, ContextQueueHook, Hook, HookFn, HookRegistry, HookType, serialize_hooks
from .items import ContextItem

__all__ = ["KNOWN_KEYS", "PoolBase", "QueueBase", "check_limit", "parse_dict", "tags_of"]

T = TypeVar("T")

#: What a hook decorator gives back: the Hook (``@q.on_evict``), or a decorator making one
#: (``@q.on_evict(lock=True)``).
Decorated = Hook | Callable[[HookFn], Hook]

#: The keys of pygents' ``to_dict``; any other key (from a newer version) is kept as it came.
KNOWN_KEYS: Final = frozenset({"limit", "items", "hooks", "tags"})


def check_limit(limit: Any, *, optional: bool) -> int | None:
    """``limit`` checked: an int >= 1 (or None where allowed); else ValueError/TypeError."""
    if limit is None and optional:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise TypeError(f"limit must be an int, got {limit!r}")
    if limit < 1:
        raise ValueError("limit must be >= 1")
    return limit


def tags_of(tags: Iterable[str] | None) -> frozenset[str]:
    """Tags as a frozenset (a bare string would be split into letters: refused)."""
    if isinstance(tags, str):
        raise TypeError("tags must be a collection of strings, not one string")
    out = frozenset(tags or ())
    if not all(isinstance(t, str) for t in out):
        raise TypeError(f"tags must be strings, got {sorted(map(repr, out))}")
    return out


def parse_dict(
    data: Mapping[str, Any],
) -> tuple[Any, list[ContextItem[Any]], Mapping[str, Any], list[str], dict[str, Any]]:
    """A ``to_dict`` payload as (limit, items, hooks, tags, unknown keys kept whole)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a dict from to_dict(), got {type(data).__name__}")
    raw_items = data.get("items", [])
    if not isinstance(raw_items, list):
        raise ValueError("'items' must be a list")
    tags = data.get("tags") or []
    if not isinstance(tags, list):
        raise ValueError("'tags' must be a list of strings")
    extra = {k: v for k, v in data.items() if k not in KNOWN_KEYS}
    return (
        data.get("limit"),
        [ContextItem.from_dict(r) for r in raw_items],
        data.get("hooks") or {},
        tags,
        extra,
    )


class _Hooked:
    """An owner of hooks: a ``hooks`` list, tags, and the decorator helper."""

    hooks: list[Hook]
    tags: frozenset[str]
    extra: dict[str, Any]

    def _decorate(self, hook_type: HookType, fn: Any, lock: bool, fixed_kwargs: dict[str, Any]) -> Decorated:
        def decorator(f: Any) -> Hook:
            wrapped = HookRegistry.wrap(f, hook_type, lock=lock, **fixed_kwargs)
            self.hooks.append(wrapped)
            return wrapped

        return decorator(fn) if fn is not None else decorator

    def _wants(self, hook_type: HookType) -> bool:
        return HookRegistry.wants(hook_type, self.hooks, self.tags)

    async def _fire(self, hook_type: HookType, *args: Any) -> None:
        await HookRegistry.fire(hook_type, list(self.hooks), self.tags, self, *args)

    def _dict(self, limit: int | None, items: list[ContextItem[Any]]) -> dict[str, Any]:
        return {
            **self.extra,
            "limit": limit,
            "items": [i.to_dict() for i in items],
            "hooks": serialize_hooks(self.hooks),
            "tags": sorted(self.tags),
        }


class QueueBase(_Hooked, Generic[T]):
    """The read side and hook decorators of a context queue (window of the newest items)."""

    @property
    def limit(self) -> int:
        """How many items the window holds."""
        raise NotImplementedError

    def _view(self) -> list[ContextItem[T]]:
        raise NotImplementedError

    @property
    def items(self) -> list[ContextItem[T]]:
        """The items, oldest first (a copy: changing it does not change the queue)."""
        return self._view()

    def history(self, last: int | None = None) -> str:
        """The contents as text, one item per line (only the ``last`` N when given)."""
        items = self._view()
        if last is not None:
            items = items[-last:] if last > 0 else []
        return "\n".join(str(i.content) for i in items)

    def __len__(self) -> int:
        return len(self._view())

    def __iter__(self) -> Iterator[ContextItem[T]]:
        return iter(self._view())

    def __bool__(self) -> bool:
        return len(self) > 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(limit={self.limit}, len={len(self)})"

    def to_dict(self) -> dict[str, Any]:
        """pygents' shape: limit, items, hooks by event and name, tags (plus unknown keys kept)."""
        return self._dict(self.limit, self._view())

    @staticmethod
    def _check_items(items: tuple[Any, ...]) -> None:
        for item in items:
            if not isinstance(item, ContextItem):
                raise TypeError(
                    f"ContextQueue only accepts ContextItem instances, got {type(item).__name__!r}"
                )

    def before_append(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(queue, incoming, current)`` before items are appended."""
        return self._decorate(ContextQueueHook.BEFORE_APPEND, fn, lock, fixed_kwargs)

    def after_append(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(queue, appended, current)`` after items are appended."""
        return self._decorate(ContextQueueHook.AFTER_APPEND, fn, lock, fixed_kwargs)

    def before_clear(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(queue, items)`` before the queue is cleared."""
        return self._decorate(ContextQueueHook.BEFORE_CLEAR, fn, lock, fixed_kwargs)

    def after_clear(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(queue)`` after the queue is cleared."""
        return self._decorate(ContextQueueHook.AFTER_CLEAR, fn, lock, fixed_kwargs)

    def on_evict(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(queue, item)`` for each oldest item pushed out of a full window."""
        return self._decorate(ContextQueueHook.ON_EVICT, fn, lock, fixed_kwargs)


class PoolBase(_Hooked, Generic[T]):
    """The read side and hook decorators of a context pool (items keyed by id)."""

    @property
    def limit(self) -> int | None:
        """The most items the pool holds (None: no bound)."""
        raise NotImplementedError

    def _map(self) -> Mapping[str, ContextItem[T]]:
        raise NotImplementedError

    @property
    def items(self) -> list[ContextItem[T]]:
        """The items in insertion order (a copy)."""
        return list(self._map().values())

    def get(self, id: str) -> ContextItem[T]:
        """The item with this id; KeyError when there is none."""
        return self._map()[id]

    def catalogue(self) -> str:
        """One ``- [id] description`` line per item: what a selector (or a model) reads."""
        return "\n".join(f"- [{i.id}] {i.description}" for i in self._map().values())

    def __len__(self) -> int:
        return len(self._map())

    def __iter__(self) -> Iterator[ContextItem[T]]:
        return iter(list(self._map().values()))

    def __contains__(self, id: object) -> bool:
        return id in self._map()

    def __bool__(self) -> bool:
        return len(self._map()) > 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(limit={self.limit}, len={len(self)})"

    def to_dict(self) -> dict[str, Any]:
        """pygents' shape: limit, items, hooks by event and name, tags (plus unknown keys kept)."""
        return self._dict(self.limit, self.items)

    @staticmethod
    def _check_item(item: Any) -> None:
        if not isinstance(item, ContextItem):
            raise TypeError(f"ContextPool only accepts ContextItem instances, got {type(item).__name__!r}")
        if item.id is None or item.description is None:
            raise ValueError("ContextPool requires a ContextItem with both 'id' and 'description' set")

    def before_add(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(pool, item)`` before an item is added (after any eviction)."""
        return self._decorate(ContextPoolHook.BEFORE_ADD, fn, lock, fixed_kwargs)

    def after_add(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(pool, item)`` after an item is added."""
        return self._decorate(ContextPoolHook.AFTER_ADD, fn, lock, fixed_kwargs)

    def before_remove(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(pool, item)`` before an item is removed."""
        return self._decorate(ContextPoolHook.BEFORE_REMOVE, fn, lock, fixed_kwargs)

    def after_remove(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(pool, item)`` after an item is removed."""
        return self._decorate(ContextPoolHook.AFTER_REMOVE, fn, lock, fixed_kwargs)

    def before_clear(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(pool, snapshot)`` before the pool is cleared; snapshot is ``{id: item}``."""
        return self._decorate(ContextPoolHook.BEFORE_CLEAR, fn, lock, fixed_kwargs)

    def after_clear(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(pool)`` after the pool is cleared."""
        return self._decorate(ContextPoolHook.AFTER_CLEAR, fn, lock, fixed_kwargs)

    def on_evict(self, fn: Any = None, *, lock: bool = False, **fixed_kwargs: Any) -> Decorated:
        """Hook ``(pool, item)`` for the oldest item pushed out of a full pool."""
        return self._decorate(ContextPoolHook.ON_EVICT, fn, lock, fixed_kwargs)
