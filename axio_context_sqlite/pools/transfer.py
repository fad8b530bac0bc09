"""Context queues and pools for ``axio-context copy`` on SQLite: the shared plans
(:mod:`axio_context.pools.sql.transfer`) run on the raw connection, inside the caller's
transaction on its worker thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axio_context.copying import PoolRow
from axio_context.pools.sql import transfer

from ..store.runner import SQLITE, drive
from .dialect import SQLITE_POOLS

__all__ = ["dump_pools", "load_family"]


def dump_pools(c: Any) -> list[PoolRow]:
    """Every container with its own entries in log order, parents before their branches."""
    return drive(c, transfer.dump_pools(SQLITE, SQLITE_POOLS))


def load_family(c: Any, family: Sequence[PoolRow]) -> None:
    """Create the containers of one family (parents first), none of which exists here."""
    drive(c, transfer.load_family(SQLITE, SQLITE_POOLS, family))
