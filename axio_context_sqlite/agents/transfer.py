"""Agent runs for ``axio-context copy``: :func:`axio_context.agents.sql.dump_runs` and
``load_run`` on this connection (each in a transaction of its own, or the caller's)."""

from __future__ import annotations

from typing import Any

from axio_context.agents import sql
from axio_context.copying import RunRow

from ..store.runner import SQLITE, drive
from ..store.transactions import read_tx, write_tx
from .threads import STATEMENTS

__all__ = ["dump_runs", "load_run"]


def dump_runs(c: Any) -> list[RunRow]:
    """Every run with the (session, position) of every message it tagged, by run id."""
    with read_tx(c):
        return drive(c, sql.dump_runs(SQLITE, STATEMENTS))


def load_run(c: Any, run: RunRow) -> None:
    """Register the run (kept when there) and tag its messages; a position a session here does
    not have is left untagged."""
    with write_tx(c):
        drive(c, sql.load_run(SQLITE, STATEMENTS, run))
