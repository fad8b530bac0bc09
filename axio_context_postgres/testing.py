"""The contract suites' factories on a PostgreSQL database (:mod:`axio_context.testing.backends`
asks for them through :meth:`PostgresBackend.contract_factories`): the shared
:class:`~axio_context.testing.factories.KitFactories` over what this backend's users call, every
store on the one pool. Nothing in the library imports it but that fixture."""

from __future__ import annotations

from typing import Any

from axio_context.testing.factories import Kit, KitFactories

from .connection import Pool, connect
from .memory import PostgresBlobStore, PostgresGraphStore, PostgresTaskStore, PostgresVectorStore
from .pools import PostgresContextPool, PostgresContextQueue, show_pool
from .state import load_state, save_state
from .store import PostgresContextStore
from .usage import PostgresUsageRecorder

__all__ = ["KIT", "PostgresFactories"]


async def _open_url(store: Any, url: str) -> tuple[bytes, str]:
    assert isinstance(store, PostgresBlobStore)
    return await store.open_url(url)


async def _another(where: str) -> Pool:
    return await connect(where, min_size=1, max_size=2)


#: What the suites call on PostgreSQL.
KIT = Kit(
    store=lambda pool, sid, project: PostgresContextStore(pool, sid, project),
    from_history=lambda h, pool, project: PostgresContextStore.from_history(h, pool=pool, project=project),
    from_context=lambda c, pool, project: PostgresContextStore.from_context(c, pool=pool, project=project),
    save_state=save_state,
    load_state=load_state,
    recorder=PostgresUsageRecorder,
    vectors=PostgresVectorStore,
    blobs=PostgresBlobStore,
    graph=PostgresGraphStore,
    tasks=PostgresTaskStore,
    open_url=_open_url,
    queue=PostgresContextQueue,
    pool=PostgresContextPool,
    show_pool=show_pool,
    another=_another,
    memory_apart=False,
)


def PostgresFactories(pool: Pool, where: str) -> KitFactories:
    """Every suite's factory on the database at ``where``, ``pool`` open on it."""
    return KitFactories(KIT, pool, where)
