"""A transcript's user turns on SQLite: the core's plans (:mod:`axio_context.turns_sql`) on this
backend's runner, with its append, its lineage walk and its session delete run inside them."""

from __future__ import annotations

from typing import Any

import aiosqlite

from axio_context.messages import Message
from axio_context.turns_sql import TurnIndexCalls

from ..usage.statements import STATEMENTS
from . import appending
from .calls import run
from .runner import SQLiteRunner
from .session_rows import segments, session_row
from .sessions import delete_session

__all__ = ["SQLiteTurnIndex", "segments_of"]


def _append(c: Any, session_id: str, project: str | None, batch: appending.Batch) -> tuple[int, int]:
    appending.append(c, session_id, project, batch.encoded, batch.tokens, batch.preview)
    row = session_row(c, session_id)
    assert row is not None, "made by the append"
    return row.sid, row.next_position - len(batch.encoded)


def segments_of(c: Any, session_id: str) -> list[tuple[int, int, int]]:
    row = session_row(c, session_id)
    return [] if row is None else segments(c, row)


class SQLiteTurnIndex(TurnIndexCalls[aiosqlite.Connection]):
    """The user turns of sessions in an SQLite database, on the caller's connection."""

    def _runner(self) -> SQLiteRunner:
        return SQLiteRunner(self._handle, inline_reads=True)  # a few indexed lookups each

    def _batch(self, messages: list[Message]) -> appending.Batch:
        return appending.batch_of(messages, self._counter)

    def _append_fn(self) -> Any:
        return _append

    def _usage_statements(self) -> Any:
        return STATEMENTS

    def _segments_fn(self) -> Any:
        return segments_of

    def _delete_fn(self) -> Any:
        return delete_session

    async def _appended(self) -> None:
        if appending.fold_due():  # as the session store does: every 64th append folds a long queue
            await run(self._handle, appending.fold_if_long)
