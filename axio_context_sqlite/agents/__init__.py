"""The agent runtime layer on SQLite: :class:`SQLiteHistoryProvider` and :func:`sqlite_config`
(see :mod:`axio_context.agents` for the contracts and docs/agents.md)."""

from .config import sqlite_config
from .provider import SQLiteHistoryProvider

__all__ = ["SQLiteHistoryProvider", "sqlite_config"]
