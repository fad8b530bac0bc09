"""Usage records for ``axio-context copy`` on PostgreSQL: :func:`axio_context.usage_limits.sql.dump`
and ``load`` in the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axio_context.copying import UsageRow
from axio_context.usage_limits import sql

from ..runner import POSTGRES, drive
from .statements import STATEMENTS

__all__ = ["dump", "load"]


async def dump(conn: Any) -> list[UsageRow]:
    """Every usage row, in the order recorded."""
    return await drive(conn, sql.dump(POSTGRES, STATEMENTS))


async def load(conn: Any, rows: Sequence[UsageRow]) -> None:
    """Insert ``rows`` (in the caller's transaction) and bring their rollups up to date."""
    await drive(conn, sql.load(POSTGRES, STATEMENTS, rows))
