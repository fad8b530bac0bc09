"""Expiry of blobs and task boards on every backend, from the library's fixture."""

from __future__ import annotations

from axio_context.testing.backends import ExpiryOnEveryBackend


class TestExpiry(ExpiryOnEveryBackend):
    pass
