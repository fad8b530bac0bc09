"""The layers of an open SQLite database as one side of a copy (:class:`~axio_context.copying.LayerSide`):
each layer's dump and load, run on the connection's worker thread.

A load writes a batch of items in one transaction (a savepoint per item, nested in it), so an
interrupted copy keeps whole items only and the next run copies the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import aiosqlite

from axio_context.copying.records_sql import PLANNED
from axio_context.sql import Dialect, Plan
from axio_context.turns_sql import dump_turns, load_turn

from ..agents import transfer as runs
from ..memory import blobs, vectors
from ..pools import transfer as pools
from ..store.calls import run
from ..store.hiding import hidden_by_session
from ..store.runner import SQLITE, drive
from ..store.transactions import read_tx, write_tx
from ..store.turns import segments_of
from ..usage import transfer as usage

__all__ = ["SQLiteLayers"]


def _planned(
    dump: Callable[[Dialect], Plan[list[Any]]], load: Callable[[Dialect, Any], Plan[Any]]
) -> tuple[Callable[[Any], list[Any]], Callable[[Any, Any], object]]:
    """A layer written once as plans, run here in the caller's transaction."""
    return (lambda c: drive(c, dump(SQLITE))), (lambda c, item: drive(c, load(SQLITE, item)))


def _one_usage(c: Any, row: Any) -> None:
    usage.load(c, [row])


#: layer -> (dump(c), load(c, item)), run on the connection's worker thread.
LAYERS: Final[dict[str, tuple[Callable[[Any], list[Any]], Callable[[Any, Any], object]]]] = {
    "usage": (usage.dump, _one_usage),
    "collections": _planned(vectors.STATEMENTS.dump, vectors.STATEMENTS.load),
    "blobs": (blobs.dump_rows, blobs.load_row),
    "pools": (pools.dump_pools, pools.load_family),
    "runs": (runs.dump_runs, runs.load_run),
    **{layer: _planned(*plans) for layer, plans in PLANNED.items()},
    "turns": _planned(lambda d: dump_turns(d, segments_of), lambda d, row: load_turn(d, segments_of, row)),
}


def _dump(c: Any, fn: Callable[[Any], list[Any]]) -> list[Any]:
    with read_tx(c):
        return fn(c)


def _load(c: Any, fn: Callable[[Any, Any], object], items: Sequence[Any]) -> list[bool]:
    with write_tx(c):
        return [fn(c, item) is not False for item in items]


class SQLiteLayers:
    """The layers of one SQLite connection, as a copy dumps and loads them."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def dump(self, layer: str) -> list[Any]:
        return await run(self._conn, _dump, LAYERS[layer][0])

    async def load(self, layer: str, items: Sequence[Any]) -> list[bool]:
        return await run(self._conn, _load, LAYERS[layer][1], list(items))

    async def hidden(self) -> dict[str, list[int]]:
        return await run(self._conn, hidden_by_session)
