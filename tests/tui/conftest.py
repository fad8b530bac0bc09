"""The browser's tests: ``backend_db`` runs a test on a SQLite file and on PostgreSQL."""

from __future__ import annotations

from tests.support.backends import backend, backend_db, backend_pg_url  # noqa: F401  (fixtures)
