"""SQLiteUsageRecorder: usage rows in the database, beside the sessions they belong to (the
logic is :class:`~axio_context.usage_limits.sql_recorder.SQLUsageRecorder`'s; the statements
are :mod:`.statements`).

Messages recorded this way get no embeddings at append time (``reindex`` adds them); use
:meth:`SQLiteContextStore.append` and ``record`` without a message if an embedder must run first.
"""

from __future__ import annotations

import aiosqlite

from axio_context.tokens import TokenCounter
from axio_context.usage_limits.sql_recorder import SQLUsageRecorder

from ..store.context_store import SQLiteContextStore
from ..store.runner import SQLiteRunner
from .statements import STATEMENTS

__all__ = ["SQLiteUsageRecorder"]


class SQLiteUsageRecorder(SQLUsageRecorder):
    """Usage recorded in the SQLite database of ``conn`` (owned by the caller).

    ``project`` files new sessions (those whose first write is a usage record) as
    :class:`SQLiteContextStore` does: the resolved current directory by default. A row's project
    is its session's. ``token_counter`` estimates recorded messages' tokens.
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        project: str | None = None,
        *,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(SQLiteRunner(conn), STATEMENTS, project, token_counter=token_counter)
        self._conn = conn

    @classmethod
    def of(
        cls, store: SQLiteContextStore, *, token_counter: TokenCounter | None = None
    ) -> SQLiteUsageRecorder:
        """A recorder on the store's connection and project (pass the store's ``token_counter``
        too if it has its own: recorded messages' estimates then match its appends)."""
        return cls(store.connection, store.project, token_counter=token_counter)
