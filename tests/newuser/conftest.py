"""What a new user hit (issue 31) and the hardening of issue 30 they share: ``backend_db`` runs a
test on a SQLite file and on PostgreSQL."""

from __future__ import annotations

from tests.support.backends import backend, backend_db, backend_pg_url  # noqa: F401  (fixtures)
