"""Agent runs for ``axio-context copy`` on PostgreSQL: :func:`axio_context.agents.sql.dump_runs`
and ``load_run`` in the caller's transaction."""

from __future__ import annotations

from typing import Any

from axio_context.agents import sql
from axio_context.copying import RunRow

from ..runner import POSTGRES, drive
from .threads import STATEMENTS

__all__ = ["dump_runs", "load_run"]


async def dump_runs(conn: Any) -> list[RunRow]:
    """Every run with the (session, position) of every message it tagged, by run id."""
    return await drive(conn, sql.dump_runs(POSTGRES, STATEMENTS))


async def load_run(conn: Any, run: RunRow) -> None:
    """Register the run (kept when there) and tag its messages; a position a session here does
    not have is left untagged."""
    await drive(conn, sql.load_run(POSTGRES, STATEMENTS, run))
