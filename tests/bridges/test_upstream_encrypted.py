"""openai-agents' own ``EncryptedSession`` tests (tests/extensions/memory/test_encrypt_session.py
of the pinned sdist, see :mod:`.upstream`) with AxioContextSession underneath, in place of its
``SQLiteSession``: its envelopes (``{"__enc__": 1, "v", "kid", "payload"}``) are stored and read
back exactly (issue 34 part 2, issue 32 goal 2).

:data:`EXCLUDED` lists the tests that do not apply, each with why. Each test runs twice: on SQLite
files, then on a PostgreSQL database of its own on the real server (``backend_db``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from tests.support.backends import Backend

from .upstream import ensure_upstream

sys.path.insert(0, str(ensure_upstream()))

_NATIVE_POP = (
    "EncryptedSession authenticates inside the pop only over openai-agents' own SQLiteSession "
    "(`isinstance(underlying, SQLiteSession)`, its private `_pop_item_with_validation`); over any "
    "other session (its SQLAlchemy and Redis ones, ours) it delegates `pop_item`, as its docstring says"
)
_RAW = "its SQLiteSession's `agent_messages` table read with raw sqlite3 (and the native pop above)"
EXCLUDED: dict[str, str] = {
    "test_encrypted_pop_wrong_key_preserves_recoverable_history": _NATIVE_POP,
    "test_encrypted_pop_rechecks_authentication_after_expired_tail": _NATIVE_POP,
    "test_encrypted_pop_cancellation_waits_for_authentication_rollback": _NATIVE_POP,
    "test_encrypted_pop_authentication_is_atomic_with_concurrent_mutations": _RAW,
    "test_encrypted_pop_wrong_key_preserves_row_identity": _RAW,
    "test_encrypted_session_scan_budget_does_not_turn_redis_negative_limit_into_history": (
        "an EncryptedSession over openai-agents' RedisSession (on fakeredis): neither session is ours"
    ),
    "test_encrypted_compaction_skips_unencrypted_stored_history": (
        "its SQLiteSession's private `_get_compaction_snapshot` hook (compaction replacing a "
        "suffix of the stored rows in place), which EncryptedSession looks up by name"
    ),
}

_module: Any = importlib.import_module("oa_upstream.test_encrypt_session")
for _name, _value in vars(_module).items():  # its tests and its fixtures
    if not _name.startswith("__") and _name not in EXCLUDED and _name not in globals():
        globals()[_name] = _value


#: every test runs on SQLite files, then on a PostgreSQL database of its own (conftest.py)
pytestmark = pytest.mark.usefixtures("upstream_on_each_backend")


async def test_an_envelope_is_stored_and_read_back_exactly(backend_db: Backend) -> None:
    from axio_context_openai_agents import AxioContextSession

    envelope: Any = {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": "gAAAAB-not-a-token"}
    session = AxioContextSession("enc", backend_db.where)
    try:
        await session.add_items([envelope, {"role": "user", "content": "plain"}])
        assert await session.get_items() == [envelope, {"role": "user", "content": "plain"}]
        assert await session.get_items(limit=2) == [envelope, {"role": "user", "content": "plain"}]
        await session.pop_item()
        assert await session.pop_item() == envelope
    finally:
        session.close()
