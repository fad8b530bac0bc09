"""The layers of an open PostgreSQL database as one side of a copy
(:class:`~axio_context.copying.LayerSide`): each layer's dump and load, in one transaction per
batch, so an interrupted copy keeps whole items only and the next run copies the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from axio_context.copying.records_sql import PLANNED
from axio_context.sql import Dialect, Plan
from axio_context.turns_sql import dump_turns, load_turn

from .. import sessions as pg_sessions
from ..agents import transfer as pg_runs
from ..memory import vectors
from ..memory.blobs import PostgresBlobStore
from ..memory.common import transaction
from ..pools import transfer as pg_pools
from ..runner import POSTGRES as POSTGRES_DIALECT
from ..runner import drive
from ..turns import segments_of
from ..usage import transfer as pg_usage

__all__ = ["POSTGRES", "PostgresSide"]


async def _pg_one_usage(conn: Any, row: Any) -> None:
    await pg_usage.load(conn, [row])


_PgDump = Callable[[Any], Awaitable[list[Any]]]
_PgLoad = Callable[[Any, Any], Awaitable[object]]


def _planned(
    dump: Callable[[Dialect], Plan[list[Any]]], load: Callable[[Dialect, Any], Plan[Any]]
) -> tuple[_PgDump, _PgLoad]:
    """A layer written once as plans, run here in the caller's transaction."""

    async def dumped(conn: Any) -> list[Any]:
        return await drive(conn, dump(POSTGRES_DIALECT))

    async def loaded(conn: Any, item: Any) -> object:
        return await drive(conn, load(POSTGRES_DIALECT, item))

    return dumped, loaded


#: layer -> (dump(conn), load(conn, item)), in the caller's transaction (blobs go through their store).
POSTGRES: Final[dict[str, tuple[_PgDump, _PgLoad]]] = {
    "usage": (pg_usage.dump, _pg_one_usage),
    "collections": _planned(vectors.STATEMENTS.dump, vectors.STATEMENTS.load),
    "pools": (pg_pools.dump_pools, pg_pools.load_family),
    "runs": (pg_runs.dump_runs, pg_runs.load_run),
    **{layer: _planned(*plans) for layer, plans in PLANNED.items()},
    "turns": _planned(lambda d: dump_turns(d, segments_of), lambda d, row: load_turn(d, segments_of, row)),
}


class PostgresSide:
    """The layers of one PostgreSQL pool, as a copy dumps and loads them."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

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
