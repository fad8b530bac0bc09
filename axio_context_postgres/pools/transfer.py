"""Context queues and pools for ``axio-context copy`` on PostgreSQL: the shared plans
(:mod:`axio_context.pools.sql.transfer`) awaited on the caller's connection, in its transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axio_context.copying import PoolRow
from axio_context.pools.sql import transfer

from ..runner import POSTGRES, drive
from .dialect import POSTGRES_POOLS

__all__ = ["dump_pools", "load_family"]


async def dump_pools(conn: Any) -> list[PoolRow]:
    """Every container with its own entries in log order, parents before their branches."""
    return await drive(conn, transfer.dump_pools(POSTGRES, POSTGRES_POOLS))


async def load_family(conn: Any, family: Sequence[PoolRow]) -> None:
    """Create the containers of one family (parents first), none of which exists here."""
    await drive(conn, transfer.load_family(POSTGRES, POSTGRES_POOLS, family))
