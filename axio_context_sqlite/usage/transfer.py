"""Usage records for ``axio-context copy``: every row as recorded (:class:`UsageRow`), and
loading rows with their rollups rebuilt as recording builds them (the session totals travel
with the sessions, so they are left alone)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

from axio_context.copying import UsageRow

from ..store.keys import key, position_of
from ..store.transactions import read_tx, write_tx
from .rows import COLUMNS, decode_extras, insert_row, usage_of

__all__ = ["dump", "load"]

_N: Final = len(COLUMNS)
_SELECT: Final = (
    f"SELECT at, session, agent, run, model, project, message, {', '.join(COLUMNS)}, audio_seconds,"
    " cost, details FROM usage_records ORDER BY id"
)


def dump(c: Any) -> list[UsageRow]:
    """Every usage row, in the order recorded."""
    with read_tx(c):
        return [
            UsageRow(
                at=r[0],
                session=r[1],
                agent=r[2],
                run=r[3],
                model=r[4],
                project=r[5],
                position=None if r[6] is None else position_of(r[6]),
                counts=tuple(r[7 : 7 + _N]),
                audio_seconds=float(r[7 + _N]),
                cost=r[8 + _N],
                details=r[9 + _N],
            )
            for r in c.execute(_SELECT)
        ]


def load(c: Any, rows: Sequence[UsageRow]) -> None:
    """Insert ``rows`` and their rollups in one transaction."""
    with write_tx(c):
        sids = dict(c.execute("SELECT id, sid FROM sessions").fetchall()) if rows else {}
        for r in rows:
            usage = usage_of(
                r.counts,
                r.audio_seconds,
                None if r.cost is None else Decimal(r.cost),
                decode_extras(r.details),
            )
            # A ledger row outlives its session: with none here, sid 0 (never given out) keeps
            # the position, which is all a reader takes from the key.
            message = None if r.position is None else key(sids.get(r.session, 0), r.position)
            insert_row(c, r.at, r.session, r.agent, r.run, r.model, r.project, message, usage)
