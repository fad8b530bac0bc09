"""Sessions as a tree (subagent sessions under their owner, forks under their parent) on an
SQLite connection: :mod:`axio_context.catalog`'s plans, run on this connection."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Unpack

import aiosqlite

from axio_context import catalog
from axio_context.catalog import TreeOptions
from axio_context.views import SessionNode

from ..store.runner import SQLiteRunner

__all__ = ["SessionNode", "descendants", "session_tree"]


async def session_tree(
    conn: aiosqlite.Connection, project: str | None = None, **options: Unpack[TreeOptions]
) -> list[SessionNode]:
    """Root sessions newest first by ``sort`` (at most ``limit``; one project's when given), each
    with the subagent sessions and forks below it, at any depth."""
    return await catalog.session_tree(SQLiteRunner(conn), project, **options)


async def descendants(conn: aiosqlite.Connection, session_ids: Iterable[str]) -> list[str]:
    """The ids of every session below ``session_ids`` in the tree (subagent sessions and forks,
    at any depth), oldest first; for exporting a session with its children."""
    return await catalog.descendants(SQLiteRunner(conn), session_ids)
