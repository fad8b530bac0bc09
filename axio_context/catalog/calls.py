"""The lineage tree's calls, written once over a backend's :class:`~axio_context.sql.Runner`:
as functions (each backend's module hands them its runner) and as methods of a database."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TypedDict, Unpack

from ..sql import Runner
from ..transcript.times import epoch_ms
from ..views import SessionNode, SessionSort
from . import tree_sql

__all__ = ["LineageCalls", "TreeOptions", "descendants", "session_tree"]


class TreeOptions(TypedDict, total=False):
    """What narrows :func:`session_tree`: at most ``limit`` roots, created since ``since``,
    newest first by ``sort`` (``"created"``, the default, or ``"updated"``)."""

    limit: int | None
    since: datetime | None
    sort: SessionSort


async def session_tree(
    runner: Runner, project: str | None = None, **options: Unpack[TreeOptions]
) -> list[SessionNode]:
    """Root sessions newest first (one project's when given), each with the subagent sessions
    and forks below it at any depth, read in one snapshot."""
    limit = options.get("limit")
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    since = epoch_ms(options.get("since"))
    return await runner.read(tree_sql.session_tree, project, limit, since, options.get("sort", "created"))


async def descendants(runner: Runner, session_ids: Iterable[str]) -> list[str]:
    """The ids of every session below ``session_ids`` (subagent sessions and forks, at any
    depth), oldest first: what ``export --children`` adds."""
    return await runner.read(tree_sql.descendants, list(session_ids))


class LineageCalls:
    """A database's lineage calls; the backend's database says which runner reads."""

    def _lineage_runner(self) -> Runner:
        raise NotImplementedError

    async def lineage_tree(
        self, project: str | None = None, **options: Unpack[TreeOptions]
    ) -> list[SessionNode]:
        """Root sessions newest first (by ``sort``) with their subagent sessions and forks below them."""
        return await session_tree(self._lineage_runner(), project, **options)

    async def descendants(self, session_ids: Iterable[str]) -> list[str]:
        """Sessions below ``session_ids`` (subagent sessions and forks), for ``export --children``."""
        return await descendants(self._lineage_runner(), session_ids)
