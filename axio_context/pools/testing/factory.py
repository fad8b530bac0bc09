"""How the suites make the queues and pools of one backend, and the shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from axio_context.embeddings import Embedder

from ..hooks import HookRegistry

__all__ = ["PoolFactory", "Recorder", "clean_registry"]


class PoolFactory(Protocol):
    """Fresh queues and pools of one backend; ``branch`` and ``from_dict`` are the backend's
    own spelling (sync in memory, awaited when persisted), ``reopen`` reads one back as a new
    process would (the same object in memory), ``shown`` is what the command line shows of it."""

    async def queue(self, limit: int, tags: list[str] | None = None) -> Any: ...

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> Any: ...

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any: ...

    async def queue_from_dict(self, data: Mapping[str, Any]) -> Any: ...

    async def pool_from_dict(self, data: Mapping[str, Any]) -> Any: ...

    async def reopen(self, owner: Any) -> Any: ...

    async def shown(self, owner: Any) -> Any:
        """What the command line prints of ``owner`` (``pools show --json``), or None where
        nothing is stored (in memory)."""
        ...


class Recorder:
    """Collects hook calls as (event, args) for the suites to compare."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def named(self, event: str) -> Any:
        async def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append((event, args + tuple(sorted(kwargs.items()))))

        record.__name__ = f"record_{event}"
        return record

    def events(self) -> list[str]:
        return [e for e, _ in self.calls]


def clean_registry() -> Iterator[None]:
    """Each test starts with an empty HookRegistry and leaves the one it found."""
    saved, saved_global = dict(HookRegistry._registry), list(HookRegistry._global_hooks)
    HookRegistry.clear()
    try:
        yield
    finally:
        HookRegistry._registry, HookRegistry._global_hooks = saved, saved_global
