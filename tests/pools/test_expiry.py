"""The pool expiry suite on every registered backend (a TTL on pool items)."""

from __future__ import annotations

from axio_context.testing.backends import PoolExpiryOnEveryBackend


class TestPoolExpiry(PoolExpiryOnEveryBackend):
    pass
