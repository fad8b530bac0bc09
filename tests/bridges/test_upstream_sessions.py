"""openai-agents' own session tests (tests/memory/test_session.py and test_session_limit.py of
the pinned sdist, see :mod:`.upstream`) against AxioContextSession.

Every test that uses only the public Session protocol runs; :data:`EXCLUDED` lists the others,
each with why: they test openai-agents' SQLiteSession's own machinery (its per-thread connection
pool, its tables read with raw SQL, its private locks), which our session does not have.

Each test runs twice: on SQLite files, then on a PostgreSQL database of its own on the real
server (``backend_db``), every session the test makes living there.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from .upstream import ensure_upstream

sys.path.insert(0, str(ensure_upstream()))

_POOL = "its per-thread sqlite3 connection pool (`_connections`), which our session does not have"
_RAW = "its own tables read or damaged with raw SQL (`_locked_connection`); we store messages, not JSON rows"
_LOCK = "its private write lock and cached connections (`_lock`, `_get_connection`, sqlite3 probes)"
EXCLUDED: dict[str, str] = {
    "test_sqlite_session_close_closes_worker_thread_connections": _POOL,
    "test_sqlite_session_reaps_connections_from_exited_worker_threads": _POOL,
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _POOL,
    "test_sqlite_session_keeps_connections_of_live_worker_threads": _POOL,
    "test_sqlite_session_close_retries_quarantined_connection": _POOL,
    "test_sqlite_session_rollback_failure_evicts_connection": _POOL,
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _RAW,
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _RAW,
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _RAW,
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _RAW,
    "test_sqlite_session_file_lock_is_shared_across_instances": _LOCK,
    "test_sqlite_session_failed_add_items_releases_write_lock": _LOCK,
    "test_sqlite_session_failed_clear_session_rolls_back": _LOCK,
    "test_sqlite_session_failed_pop_item_releases_write_lock": _LOCK,
    # It swaps sqlite3.Connection's class for one that pauses in commit(); our cancellation
    # guarantee (a write runs to its end, then the cancellation is raised) is tested in
    # test_openai_agents.py::test_cancelled_pop_keeps_its_outcome.
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _LOCK,
}

_modules: list[Any] = [
    importlib.import_module(f"oa_upstream.{name}") for name in ("test_session", "test_session_limit")
]
for _module in _modules:
    for _name in dir(_module):
        if _name.startswith("test_") and _name not in EXCLUDED:
            globals()[_name] = getattr(_module, _name)


#: every test runs on SQLite files, then on a PostgreSQL database of its own (conftest.py)
pytestmark = pytest.mark.usefixtures("upstream_on_each_backend")
