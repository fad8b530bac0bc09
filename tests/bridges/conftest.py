"""The bridges' tests: openai-agents without tracing exports or a real key (no network here),
and ``backend``: each test's database on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.backends import Backend, backend, backend_db, backend_pg_url  # noqa: F401  (fixtures)


@pytest.fixture(scope="session", autouse=True)
def _no_tracing_export() -> None:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    os.environ.setdefault("OPENAI_API_KEY", "test_key")  # clients built but never called


def pytest_configure(config: pytest.Config) -> None:
    # a marker openai-agents' own tests use (tests/bridges/test_upstream_advanced.py runs them)
    config.addinivalue_line("markers", "review_optional: openai-agents' marker, no meaning here")


@pytest.fixture
def upstream_on_each_backend(backend_db: Backend) -> Iterator[None]:  # noqa: F811 (the fixture above)
    """openai-agents' tests (and ours in their form) on each backend: the sessions they make
    live in the test's PostgreSQL database on the postgres run, in files on the SQLite one."""
    from .upstream import use_postgres

    use_postgres(backend_db.where if backend_db.name == "postgres" else None)
    try:
        yield
    finally:
        use_postgres(None)
