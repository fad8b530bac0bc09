"""Sessions as a tree on PostgreSQL (subagent sessions under their owner, forks under their
parent, as the SQLite backend places them): :mod:`axio_context.catalog`'s plans on a pool."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Unpack

from axio_context import catalog
from axio_context.catalog import TreeOptions
from axio_context.views import SessionNode

from .connection import Pool
from .runner import PostgresRunner

__all__ = ["SessionNode", "descendants", "session_tree"]

#: What errors call the tree's reads.
WHERE: Final = "the session tree"


async def session_tree(
    pool: Pool, project: str | None = None, **options: Unpack[TreeOptions]
) -> list[SessionNode]:
    """Root sessions newest first by ``sort`` (at most ``limit``; one project's when given),
    each with the subagent sessions and forks below it, at any depth."""
    return await catalog.session_tree(PostgresRunner(pool, WHERE), project, **options)


async def descendants(pool: Pool, session_ids: Iterable[str]) -> list[str]:
    """The ids of every session below ``session_ids`` in the tree (subagent sessions and forks,
    at any depth), oldest first."""
    return await catalog.descendants(PostgresRunner(pool, WHERE), session_ids)
