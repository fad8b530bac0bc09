"""A transcript's user turns on PostgreSQL: the core's plans (:mod:`axio_context.turns_sql`) on
this backend's runner, with its append, its segment chain and its session delete run inside them."""

from __future__ import annotations

from typing import Any

from axio_context.messages import Message
from axio_context.turns_sql import TurnIndexCalls

from . import lineage, writes
from .connection import Pool
from .runner import PostgresRunner
from .usage.statements import STATEMENTS

__all__ = ["PostgresTurnIndex", "segments_of"]


async def _append(
    conn: Any, session_id: str, project: str | None, batch: tuple[list[Any], Any]
) -> tuple[int, int]:
    rows, preview = batch
    first = await writes.append_rows(conn, session_id, project, rows, preview)
    return int(await conn.fetchval("SELECT seg FROM sessions WHERE id = $1", session_id)), first


async def segments_of(conn: Any, session_id: str) -> list[tuple[int, int, int]]:
    row = await conn.fetchrow("SELECT seg, next_position FROM sessions WHERE id = $1", session_id)
    return [] if row is None else await lineage.chain(conn, row["seg"], row["next_position"])


class PostgresTurnIndex(TurnIndexCalls[Pool]):
    """The user turns of sessions in a PostgreSQL database, on a pool the caller owns."""

    def _runner(self) -> PostgresRunner:
        return PostgresRunner(self._handle, "PostgreSQL turns")

    def _batch(self, messages: list[Message]) -> tuple[list[Any], Any]:
        return writes.batch_of(messages, self._counter)

    def _append_fn(self) -> Any:
        return _append

    def _usage_statements(self) -> Any:
        return STATEMENTS

    def _segments_fn(self) -> Any:
        return segments_of

    def _delete_fn(self) -> Any:
        return writes.delete_session
