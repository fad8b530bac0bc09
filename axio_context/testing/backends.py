"""Every contract suite on every registered backend, from one fixture (a pytest plugin module;
nothing in the library imports it).

:func:`axio_backend` opens a fresh, empty database on each backend the registry knows
(:mod:`axio_context.backends.registry`: SQLite, PostgreSQL, any a package registers) in turn,
through the registry, and hands out the suites' factories the backend gives for it
(:meth:`~axio_context.backends.Backend.contract_factories`). The classes below are the shipped
suites bound to it; a test module subclasses one and every test runs on every backend::

    # conftest.py
    from axio_context.testing.backends import axio_backend, axio_backend_name, axio_database_location

    # test_contracts.py
    class TestContextStore(ContextStoreOnEveryBackend): ...

Where a fresh database is comes from :func:`axio_database_location`: a file in ``tmp_path`` for
SQLite; for a server's backend the URL in ``$AXIO_CONTEXT_TEST_<NAME>_URL`` (a database the
caller empties between tests), or, better, a conftest that overrides the fixture with a
database of the server its tests start. ``$AXIO_CONTEXT_TEST_BACKENDS`` (names, comma
separated) runs the suites on those backends only.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio

from ..backends.registry import Backend, BackendMissingError, backend_for, connect, registered_schemes
from ..memory.testing import BlobStoreContract, GraphStoreContract, TaskStoreContract, VectorStoreContract
from ..memory.testing.expiry import ExpiringFactory, ExpiryContract
from ..memory.testing.factory import MemoryFactory
from ..pools.testing import ContextPoolContract, ContextQueueContract
from ..pools.testing.expiry import ExpiringPoolFactory, PoolExpiryContract
from ..pools.testing.factory import PoolFactory
from ..pools.testing.stored import StoredItemsContract
from ..pools.testing.writers import SharedWritersContract
from ..state.contract import StateFactory, StoredStateContract
from ..usage_limits.contract import RecorderFactory, UsageRecorderContract
from .checkpoints import CheckpointStoreContract, PopCheckpointContract
from .contract import ContextStoreContract
from .factories import ContractFactories
from .samples import StoreFactory

__all__ = [
    "BackendUnderTest",
    "BlobStoreOnEveryBackend",
    "ContextPoolOnEveryBackend",
    "ContextQueueOnEveryBackend",
    "ContextStoreOnEveryBackend",
    "ContractFactories",
    "ExpiryOnEveryBackend",
    "GraphStoreOnEveryBackend",
    "PoolExpiryOnEveryBackend",
    "SharedWritersOnEveryBackend",
    "StoredItemsOnEveryBackend",
    "StoredStateOnEveryBackend",
    "TaskStoreOnEveryBackend",
    "UsageRecorderOnEveryBackend",
    "VectorStoreOnEveryBackend",
    "axio_backend",
    "axio_backend_name",
    "axio_database_location",
    "backend_names",
]


@dataclass
class BackendUnderTest:
    """One test's fresh database: the backend's name, its location, the backend, the handle
    open on it (a connection or pool) and the suites' factories on that handle."""

    name: str
    where: str
    backend: Backend
    handle: Any
    factories: ContractFactories


def backend_names() -> list[str]:
    """Every registered backend that loads here, once each (``postgres://`` and
    ``postgresql://`` are one backend), by name."""
    names: list[str] = []
    for scheme in registered_schemes():
        try:
            name = backend_for(f"{scheme}://").name
        except BackendMissingError:  # its package or driver is not installed here
            continue
        if name not in names:
            names.append(name)
    return names


def _chosen() -> list[str]:
    """The backends to test on: ``$AXIO_CONTEXT_TEST_BACKENDS`` (names, comma separated), else
    every registered one."""
    named = os.environ.get("AXIO_CONTEXT_TEST_BACKENDS", "")
    return [n.strip() for n in named.split(",") if n.strip()] or backend_names()


@pytest.fixture(params=_chosen())
def axio_backend_name(request: pytest.FixtureRequest) -> str:
    """The backend of this test: each registered one in turn."""
    name: str = request.param
    return name


@pytest.fixture
def axio_database_location(axio_backend_name: str, tmp_path: Path) -> str:
    """Where this test's fresh, empty database is on ``axio_backend_name``: a file in
    ``tmp_path`` for SQLite, else ``$AXIO_CONTEXT_TEST_<NAME>_URL``. Override it in a conftest
    to hand out databases of a server the test suite starts."""
    if axio_backend_name == "sqlite":
        return str(tmp_path / "contract.db")
    variable = f"AXIO_CONTEXT_TEST_{axio_backend_name.upper()}_URL"
    url = os.environ.get(variable)
    if not url:
        pytest.skip(
            f"no {axio_backend_name} database to test on: set ${variable} or override axio_database_location"
        )
    return url


@pytest_asyncio.fixture
async def axio_backend(
    axio_backend_name: str, axio_database_location: str
) -> AsyncIterator[BackendUnderTest]:
    """This test's fresh database on ``axio_backend_name``, opened through the registry, with
    the suites' factories on it; closed after the test."""
    where = axio_database_location
    backend = backend_for(where)
    assert backend.name == axio_backend_name, f"{where} is a {backend.name} database, not {axio_backend_name}"
    handle = await connect(where)
    factories = backend.contract_factories(handle, where)
    try:
        yield BackendUnderTest(axio_backend_name, where, backend, handle, factories)
    finally:
        try:
            await factories.close()
        finally:
            await handle.close()


# -- the shipped suites, bound to it ---------------------------------------------------------------


class ContextStoreOnEveryBackend(ContextStoreContract, CheckpointStoreContract, PopCheckpointContract):
    """The ContextStore, checkpoint and pop suites on every backend."""

    @pytest.fixture
    def factory(self, axio_backend: BackendUnderTest) -> StoreFactory:
        return axio_backend.factories.stores


class StoredStateOnEveryBackend(StoredStateContract):
    """The stored-state suite on every backend."""

    @pytest.fixture
    def states(self, axio_backend: BackendUnderTest) -> StateFactory:
        return axio_backend.factories.states


class UsageRecorderOnEveryBackend(UsageRecorderContract):
    """The usage recorder suite on every backend."""

    @pytest.fixture
    def factory(self, axio_backend: BackendUnderTest) -> RecorderFactory:
        return axio_backend.factories.recorders


class _Memory:
    @pytest.fixture
    def memory(self, axio_backend: BackendUnderTest) -> MemoryFactory:
        return axio_backend.factories.memory


class VectorStoreOnEveryBackend(_Memory, VectorStoreContract):
    """The vector store suite on every backend."""


class BlobStoreOnEveryBackend(_Memory, BlobStoreContract):
    """The blob store suite on every backend."""


class GraphStoreOnEveryBackend(_Memory, GraphStoreContract):
    """The graph store suite on every backend."""


class TaskStoreOnEveryBackend(_Memory, TaskStoreContract):
    """The task store suite on every backend."""


class ExpiryOnEveryBackend(ExpiryContract):
    """The expiry suite (blob and task stores with a TTL) on every backend."""

    @pytest.fixture
    def expiring(self, axio_backend: BackendUnderTest) -> ExpiringFactory:
        return axio_backend.factories.expiring


class _Pools:
    @pytest.fixture
    def pools(self, axio_backend: BackendUnderTest) -> PoolFactory:
        return axio_backend.factories.pools


class ContextQueueOnEveryBackend(_Pools, ContextQueueContract):
    """The queue suite on every backend."""


class ContextPoolOnEveryBackend(_Pools, ContextPoolContract):
    """The pool suite on every backend."""


class StoredItemsOnEveryBackend(_Pools, StoredItemsContract):
    """The stored-items suite (what a pool stores reads back) on every backend."""


class SharedWritersOnEveryBackend(_Pools, SharedWritersContract):
    """The stale-writer suite (several handles on one pool) on every backend."""


class PoolExpiryOnEveryBackend(PoolExpiryContract):
    """The pool expiry suite (a TTL on pool items) on every backend."""

    @pytest.fixture
    def pools(self, axio_backend: BackendUnderTest) -> ExpiringPoolFactory:
        return cast(ExpiringPoolFactory, axio_backend.factories.pools)
