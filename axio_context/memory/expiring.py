"""Every store of one database that has a TTL, counted and swept together: what
``axio-context prune --expired`` and ``stats`` call, and what a long-running process sweeps
with :meth:`StoreExpiry.sweeper` (see :mod:`axio_context.expiry`)."""

from __future__ import annotations

from typing import Protocol

import msgspec

from ..catalog.expiry_sql import SessionExpiry
from ..expiry import Sweeper

__all__ = ["ExpiredCounts", "ExpiringStore", "StoreExpiry"]


class ExpiringStore(Protocol):
    """A store whose items may expire."""

    async def count_expired(self) -> int:
        """How many items have expired and wait for a sweep."""
        ...

    async def sweep_expired(self) -> int:
        """Delete the expired items; how many went."""
        ...


class ExpiredCounts(msgspec.Struct, frozen=True):
    """How many expired items each store holds (or a sweep deleted)."""

    documents: int = 0
    blobs: int = 0
    task_lists: int = 0
    sessions: int = 0
    pool_items: int = 0

    @property
    def total(self) -> int:
        """All of them."""
        return self.documents + self.blobs + self.task_lists + self.sessions + self.pool_items

    def parts(self) -> str:
        """``'blobs 2, task lists 1'``: the stores that hold any, for people."""
        named = {
            "documents": self.documents,
            "blobs": self.blobs,
            "task lists": self.task_lists,
            "sessions": self.sessions,
            "pool items": self.pool_items,
        }
        return ", ".join(f"{name} {n:,}" for name, n in named.items() if n) or "none"


class StoreExpiry:
    """The expiring stores of one database: its vector documents, blob keys, task boards and (when
    given) its sessions and context pool items."""

    def __init__(
        self,
        documents: ExpiringStore,
        blobs: ExpiringStore,
        task_lists: ExpiringStore,
        sessions: SessionExpiry | None = None,
        pool_items: ExpiringStore | None = None,
    ) -> None:
        named = {"documents": documents, "blobs": blobs, "task_lists": task_lists}
        named |= {"sessions": sessions} if sessions is not None else {}
        named |= {"pool_items": pool_items} if pool_items is not None else {}
        self._stores: dict[str, ExpiringStore] = named
        #: The database's sessions (None: this database's sessions take no TTL).
        self.sessions = sessions

    async def count_expired(self) -> ExpiredCounts:
        """How many items have expired in each store (read through each one's expiry index)."""
        return ExpiredCounts(**{name: await store.count_expired() for name, store in self._stores.items()})

    async def sweep_expired(self) -> ExpiredCounts:
        """Delete every expired item (a transaction per store); how many went from each."""
        return ExpiredCounts(**{name: await store.sweep_expired() for name, store in self._stores.items()})

    def sweeper(self, interval: float) -> Sweeper:
        """A :class:`~axio_context.expiry.Sweeper` of these stores every ``interval`` seconds,
        not yet started: ``async with stores.expiry().sweeper(60):`` runs it for the block."""
        return Sweeper(self.sweep_expired, interval)
