"""The stored-state contract (axio_context.state.contract) on every registered backend, from the
library's fixture (:mod:`axio_context.testing.backends`)."""

from __future__ import annotations

from axio_context.testing.backends import StoredStateOnEveryBackend


class TestStoredState(StoredStateOnEveryBackend):
    pass
