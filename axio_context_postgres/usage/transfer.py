"""Usage records for ``axio-context copy`` on PostgreSQL: every row as recorded
(:class:`UsageRow`), and loading rows with their rollups rebuilt as recording builds them (the
session totals travel with the sessions, so they are left alone)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

from axio_context.copying import UsageRow
from axio_context_sqlite.usage.rows import COLUMNS, decode_extras, usage_of

from .writing import insert_row

__all__ = ["dump", "load"]

_N: Final = len(COLUMNS)
_SELECT: Final = (
    f"SELECT at, session, agent, run, model, project, position, {', '.join(COLUMNS)}, audio_seconds,"
    " cost, details FROM usage_records ORDER BY id"
)


async def dump(conn: Any) -> list[UsageRow]:
    """Every usage row, in the order recorded."""
    return [
        UsageRow(
            at=int(r[0]),
            session=r[1],
            agent=r[2],
            run=r[3],
            model=r[4],
            project=r[5],
            position=r[6],
            counts=tuple(int(v) for v in tuple(r)[7 : 7 + _N]),
            audio_seconds=float(r[7 + _N]),
            cost=None if r[8 + _N] is None else str(r[8 + _N]),
            details=r[9 + _N],
        )
        for r in await conn.fetch(_SELECT)
    ]


async def load(conn: Any, rows: Sequence[UsageRow]) -> None:
    """Insert ``rows`` and their rollups (in the caller's transaction), each run given to the
    session that recorded it first."""
    for r in rows:
        if r.run:
            await conn.execute(
                "INSERT INTO usage_runs (run, session) VALUES ($1, $2) ON CONFLICT (run) DO NOTHING",
                r.run,
                r.session,
            )
        usage = usage_of(
            r.counts, r.audio_seconds, None if r.cost is None else Decimal(r.cost), decode_extras(r.details)
        )
        await insert_row(conn, r.at, r.session, r.agent, r.run, r.model, r.project, r.position, usage)
