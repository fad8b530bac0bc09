"""One call from a SQLite file to a :class:`~axio_context.agents.ContextConfig`."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from types import TracebackType
from typing import Any

from axio_context.agents import ContextConfig, HistoryRetention, Pipeline

from .provider import SQLiteHistoryProvider

__all__ = ["sqlite_config"]


class _Opening:
    """What :func:`sqlite_config` returns: await it, or ``async with`` it (closed on the way out)."""

    def __init__(
        self,
        path: str | Path | None,
        pipeline: Pipeline | None,
        retention: HistoryRetention,
        project: str | None,
    ) -> None:
        self._args = (path, pipeline, retention, project)
        self._config: ContextConfig | None = None

    async def _open(self) -> ContextConfig:
        path, pipeline, retention, project = self._args
        provider = await SQLiteHistoryProvider.open(path, project=project)
        return ContextConfig(provider, pipeline, retention=retention)

    def __await__(self) -> Generator[Any, None, ContextConfig]:
        return self._open().__await__()

    async def __aenter__(self) -> ContextConfig:
        self._config = await self._open()
        return self._config

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._config is not None:
            await self._config.close()


def sqlite_config(
    path: str | Path | None = None,
    pipeline: Pipeline | None = None,
    *,
    retention: HistoryRetention = HistoryRetention.PERMANENT,
    project: str | None = None,
) -> _Opening:
    """A ContextConfig whose history is a :class:`SQLiteHistoryProvider` on ``path`` (default:
    the default database file, as the command line uses). ``config = await sqlite_config(...)``
    (then ``await config.close()``) or ``async with sqlite_config(...) as config``."""
    return _Opening(path, pipeline, retention, project)
