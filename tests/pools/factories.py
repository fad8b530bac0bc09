"""The in-memory queue and pool the contract suites run against (the backends' come from the
library's fixture, :mod:`axio_context.testing.backends`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from axio_context.embeddings import Embedder
from axio_context.pools import ContextPool, ContextQueue


class InMemoryPools:
    """pygents' in-memory queue and pool."""

    async def queue(self, limit: int, tags: list[str] | None = None) -> ContextQueue[Any]:
        return ContextQueue(limit, tags)

    async def pool(
        self, limit: int | None = None, tags: list[str] | None = None, embedder: Embedder | None = None
    ) -> ContextPool[Any]:
        return ContextPool(limit, tags, embedder=embedder)

    async def branch(self, owner: Any, *args: Any, **kwargs: Any) -> Any:
        return owner.branch(*args, **kwargs)

    async def queue_from_dict(self, data: Mapping[str, Any]) -> ContextQueue[Any]:
        return ContextQueue.from_dict(data)

    async def pool_from_dict(self, data: Mapping[str, Any]) -> ContextPool[Any]:
        return ContextPool.from_dict(data)

    async def reopen(self, owner: Any) -> Any:
        return owner

    async def shown(self, owner: Any) -> Any:
        return None
