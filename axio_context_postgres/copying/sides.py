"""One side of a copy: the dump and load of each layer on an open SQLite database or an open
PostgreSQL one, behind the same two calls, so the copy itself does not ask which it has.

A load writes a batch of items in one transaction (a savepoint per item on SQLite, nested in
it), so an interrupted copy keeps whole items only and the next run copies the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from axio_context_sqlite.agents import transfer as sqlite_runs
from axio_context_sqlite.memory import blobs as sqlite_blobs
from axio_context_sqlite.memory import transfer as sqlite_memory
from axio_context_sqlite.pools import transfer as sqlite_pools
from axio_context_sqlite.state import transfer as sqlite_records
from axio_context_sqlite.store.calls import run
from axio_context_sqlite.store.transactions import read_tx, write_tx
from axio_context_sqlite.usage import transfer as sqlite_usage

from .. import sessions as pg_sessions
from ..agents import transfer as pg_runs
from ..memory import transfer as pg_memory
from ..memory.blobs import PostgresBlobStore
from ..memory.common import transaction
from ..pools import transfer as pg_pools
from ..usage import transfer as pg_usage
from . import records as pg_records

__all__ = ["PostgresSide", "SQLiteSide", "Side", "side_of"]


def _one_usage(c: Any, row: Any) -> None:
    sqlite_usage.load(c, [row])


async def _pg_one_usage(conn: Any, row: Any) -> None:
    await pg_usage.load(conn, [row])


#: layer -> (dump(c), load(c, item)) on SQLite, run on the connection's worker thread.
SQLITE: Final[dict[str, tuple[Callable[[Any], list[Any]], Callable[[Any, Any], object]]]] = {
    "usage": (sqlite_usage.dump, _one_usage),
    "collections": (sqlite_memory.dump_collections, sqlite_memory.load_collection),
    "blobs": (sqlite_blobs.dump_rows, sqlite_blobs.load_row),
    "graph_entities": (sqlite_memory.dump_entities, sqlite_memory.load_entity),
    "graph_relationships": (sqlite_memory.dump_relationships, sqlite_memory.load_relationship),
    "task_lists": (sqlite_memory.dump_task_lists, sqlite_memory.load_task_list),
    "pools": (sqlite_pools.dump_pools, sqlite_pools.load_family),
    "states": (sqlite_records.dump_states, sqlite_records.load_state),
    "conversations": (sqlite_records.dump_conversations, sqlite_records.load_conversation),
    "conversation_entries": (sqlite_records.dump_entries, sqlite_records.load_entry),
    "runs": (sqlite_runs.dump_runs, sqlite_runs.load_run),
}

_PgDump = Callable[[Any], Awaitable[list[Any]]]
_PgLoad = Callable[[Any, Any], Awaitable[object]]

#: The same on PostgreSQL, in the caller's transaction (blobs go through their store).
POSTGRES: Final[dict[str, tuple[_PgDump, _PgLoad]]] = {
    "usage": (pg_usage.dump, _pg_one_usage),
    "collections": (pg_memory.dump_collections, pg_memory.load_collection),
    "graph_entities": (pg_memory.dump_entities, pg_memory.load_entity),
    "graph_relationships": (pg_memory.dump_relationships, pg_memory.load_relationship),
    "task_lists": (pg_memory.dump_task_lists, pg_memory.load_task_list),
    "pools": (pg_pools.dump_pools, pg_pools.load_family),
    "states": (pg_records.dump_states, pg_records.load_state),
    "conversations": (pg_records.dump_conversations, pg_records.load_conversation),
    "conversation_entries": (pg_records.dump_entries, pg_records.load_entry),
    "runs": (pg_runs.dump_runs, pg_runs.load_run),
}


class Side:
    """A database's layers: :meth:`dump` every item of one, :meth:`load` a batch of items."""

    async def dump(self, layer: str) -> list[Any]:
        raise NotImplementedError

    async def load(self, layer: str, items: Sequence[Any]) -> list[bool]:
        """Write ``items`` in one transaction; per item, whether it was written (a state whose
        session is not here is not)."""
        raise NotImplementedError

    async def hidden(self) -> dict[str, list[int]]:
        """Per session, the positions ``clear_run`` hid (an export leaves them out and numbers
        the rest densely, so positions that point at messages are renumbered the same way)."""
        raise NotImplementedError


def _dump(c: Any, fn: Callable[[Any], list[Any]]) -> list[Any]:
    with read_tx(c):
        return fn(c)


def _load(c: Any, fn: Callable[[Any, Any], object], items: Sequence[Any]) -> list[bool]:
    with write_tx(c):
        return [fn(c, item) is not False for item in items]


def _hidden(c: Any) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for session_id, position in c.execute(
        "SELECT s.id, h.position FROM hidden_messages h JOIN sessions s ON s.sid = h.sid"
        " ORDER BY s.id, h.position"
    ):
        out.setdefault(session_id, []).append(int(position))
    return out


class SQLiteSide(Side):
    """The layers of an open :class:`axio_context_sqlite.Database`."""

    def __init__(self, db: Any) -> None:
        self._conn = db.connection

    async def dump(self, layer: str) -> list[Any]:
        return await run(self._conn, _dump, SQLITE[layer][0])

    async def load(self, layer: str, items: Sequence[Any]) -> list[bool]:
        return await run(self._conn, _load, SQLITE[layer][1], list(items))

    async def hidden(self) -> dict[str, list[int]]:
        return await run(self._conn, _hidden)


class PostgresSide(Side):
    """The layers of an open :class:`..database.PostgresDatabase`."""

    def __init__(self, db: Any) -> None:
        self._pool = db.pool

    async def dump(self, layer: str) -> list[Any]:
        if layer == "blobs":
            return await PostgresBlobStore(self._pool).dump_rows()
        async with transaction(self._pool, readonly=True) as conn:
            return await POSTGRES[layer][0](conn)

    async def load(self, layer: str, items: Sequence[Any]) -> list[bool]:
        if layer == "blobs":  # one transaction per blob, in the store (its bytes go in pieces)
            store = PostgresBlobStore(self._pool)
            for item in items:
                await store.load_row(item)
            return [True] * len(items)
        async with transaction(self._pool) as conn:
            if layer == "usage":  # a batch in a few statements, not a round trip per row
                await pg_usage.load(conn, items)
                return [True] * len(items)
            return [await POSTGRES[layer][1](conn, item) is not False for item in items]

    async def hidden(self) -> dict[str, list[int]]:
        async with transaction(self._pool, readonly=True) as conn:
            rows = await conn.fetch(
                "SELECT id, sid, seg, next_position, TRUE AS hides FROM sessions"
                " WHERE EXISTS (SELECT 1 FROM hidden_messages h WHERE h.sid = sessions.sid)"
            )
            return {r["id"]: await pg_sessions.hidden(conn, r) for r in rows}


def side_of(db: Any) -> Side:
    """The side for an open database of either backend."""
    from ..database import PostgresDatabase

    return PostgresSide(db) if isinstance(db, PostgresDatabase) else SQLiteSide(db)
