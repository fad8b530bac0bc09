"""ContextConfig: where an agent's history lives, the pipeline that makes its prompt window, and
what to keep when a run ends (ravi's ``ContextConfig``)."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from ..compaction.strategies import CompactionContext, Compacts, Strategy
from ..messages import Message
from .compaction import SlidingWindowCompaction
from .history import HistoryProvider, InMemoryHistoryProvider
from .retention import HistoryRetention

__all__ = ["ContextConfig", "Pipeline", "window_of"]


#: A prompt-window pipeline: one of our strategies (a CompactionPipeline, a TokenBudget...) or
#: anything with ravi's ``async compact(raw)``.
Pipeline = Strategy | Compacts


async def window_of(pipeline: Pipeline, history: list[Message]) -> list[Message]:
    """Run ``pipeline`` over ``history`` (which it must not change) and return the window."""
    if isinstance(pipeline, Strategy):
        return await pipeline.apply(list(history), CompactionContext())
    return list(await pipeline.compact(list(history)))


class ContextConfig:
    """``ContextConfig(history, pipeline=None, *, retention=HistoryRetention.PERMANENT)``.

    A missing pipeline is one :class:`~.compaction.SlidingWindowCompaction` (ravi's default of
    100 messages). :meth:`default` keeps the history in memory; for a SQLite file use
    :func:`axio_context_sqlite.agents.sqlite_config` (the default database when no path is
    given). ``await config.close()`` (or ``async with config``) closes a provider that has a
    ``close`` (a SQLite one opened by ``sqlite_config``).
    """

    def __init__(
        self,
        history: HistoryProvider,
        pipeline: Pipeline | None = None,
        *,
        retention: HistoryRetention = HistoryRetention.PERMANENT,
    ) -> None:
        if not isinstance(history, HistoryProvider):
            raise TypeError(f"history must be a HistoryProvider, got {type(history).__name__}")
        if pipeline is not None and not isinstance(pipeline, Strategy | Compacts):
            raise TypeError(f"pipeline must be a Strategy or have compact(), got {type(pipeline).__name__}")
        if not isinstance(retention, HistoryRetention):
            raise TypeError(f"retention must be a HistoryRetention, got {retention!r}")
        self.history = history
        self.pipeline: Pipeline = SlidingWindowCompaction() if pipeline is None else pipeline
        self.retention = retention

    @classmethod
    def default(
        cls, pipeline: Pipeline | None = None, *, retention: HistoryRetention = HistoryRetention.PERMANENT
    ) -> ContextConfig:
        """A config whose history is an :class:`InMemoryHistoryProvider`."""
        return cls(InMemoryHistoryProvider(), pipeline, retention=retention)

    async def close(self) -> None:
        """Close the history provider, where it has a ``close``."""
        close = getattr(self.history, "close", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        name = type(self.history).__name__
        return f"ContextConfig({name}, {self.pipeline!r}, retention={self.retention.name})"
