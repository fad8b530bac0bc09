"""Child processes of the multi-process and crash tests (run as scripts, ``PYTHONPATH`` = the root)."""

from __future__ import annotations

import os

from axio_context_sqlite.store import chunks, indexing

#: Environment variable a test sets to make a child seal constantly: "CHUNK,SEAL_TAIL,FLUSH_AT".
SEALING_ENV = "AXIO_TEST_SEALING"


def apply_test_sealing() -> None:
    """Small chunks, a small sealed tail and an early keyword-index fold, when the test asks."""
    if SEALING_ENV in os.environ:
        size, tail, fold_at = map(int, os.environ[SEALING_ENV].split(","))
        chunks.CHUNK, chunks.SEAL_TAIL, indexing.FLUSH_AT = size, tail, fold_at
