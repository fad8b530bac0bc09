"""Usage records for ``axio-context copy``: :func:`axio_context.usage_limits.sql.dump` and
``load`` on this connection (the caller's transaction)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axio_context.copying import UsageRow
from axio_context.usage_limits import sql

from ..store.runner import SQLITE, drive
from ..store.transactions import read_tx, write_tx
from .statements import STATEMENTS

__all__ = ["dump", "load"]


def dump(c: Any) -> list[UsageRow]:
    """Every usage row, in the order recorded."""
    with read_tx(c):
        return drive(c, sql.dump(SQLITE, STATEMENTS))


def load(c: Any, rows: Sequence[UsageRow]) -> None:
    """Insert ``rows`` and their rollups in one transaction."""
    with write_tx(c):
        drive(c, sql.load(SQLITE, STATEMENTS, rows))
