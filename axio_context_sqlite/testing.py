"""The contract suites' factories on an SQLite file (:mod:`axio_context.testing.backends` asks
for them through :meth:`SQLiteBackend.contract_factories`): the shared
:class:`~axio_context.testing.factories.KitFactories` over what this backend's users call. Each
memory store gets a connection of its own, as separate parts of an application open them.
Nothing in the library imports it but that fixture."""

from __future__ import annotations

import os
from typing import Any

from axio_context.testing.factories import Kit, KitFactories

from .memory import SQLiteBlobStore, SQLiteGraphStore, SQLiteTaskStore, SQLiteVectorStore, open_blob_url
from .pools import SQLiteContextPool, SQLiteContextQueue, show_pool
from .state import load_state, save_state
from .store.connection import connect
from .store.context_store import SQLiteContextStore
from .usage import SQLiteUsageRecorder

__all__ = ["KIT", "SQLiteFactories"]


async def _open_url(store: Any, url: str) -> tuple[bytes, str]:
    return await open_blob_url(url)  # the file the URL names, opened again read-only


#: What the suites call on SQLite.
KIT = Kit(
    store=lambda conn, sid, project: SQLiteContextStore(conn, sid, project=project),
    from_history=lambda h, conn, project: SQLiteContextStore.from_history(h, conn=conn, project=project),
    from_context=lambda c, conn, project: SQLiteContextStore.from_context(c, conn=conn, project=project),
    save_state=save_state,
    load_state=load_state,
    recorder=SQLiteUsageRecorder,
    vectors=SQLiteVectorStore,
    blobs=SQLiteBlobStore,
    graph=SQLiteGraphStore,
    tasks=SQLiteTaskStore,
    open_url=_open_url,
    queue=SQLiteContextQueue,
    pool=SQLiteContextPool,
    show_pool=show_pool,
    another=connect,
    memory_apart=True,
)


def SQLiteFactories(conn: Any, where: str | os.PathLike[str]) -> KitFactories:
    """Every suite's factory on the database file ``where``, ``conn`` open on it."""
    return KitFactories(KIT, conn, where)
