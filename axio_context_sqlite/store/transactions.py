"""Transactions: a read snapshot across several statements, and a write transaction that takes
the write lock up front (a savepoint inside a caller's transaction)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["read_tx", "write_tx"]


@contextmanager
def read_tx(c: Any) -> Iterator[None]:
    """One read snapshot across several statements (WAL readers never block writers)."""
    if c.in_transaction:  # already inside a caller's transaction
        yield
        return
    c.execute("BEGIN")
    try:
        yield
    finally:
        if c.in_transaction:
            c.execute("COMMIT")


@contextmanager
def write_tx(c: Any) -> Iterator[None]:
    """One write transaction that takes the write lock up front.

    Inside a transaction the caller opened on the connection it is a savepoint instead: its
    writes join the caller's, which commits or rolls them back with its own.
    """
    if c.in_transaction:
        c.execute("SAVEPOINT axio_write")
        try:
            yield
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK TO axio_write")
                c.execute("RELEASE axio_write")
            raise
        c.execute("RELEASE axio_write")
        return
    c.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if c.in_transaction:
            c.execute("ROLLBACK")
        raise
    try:
        c.execute("COMMIT")
    except BaseException:
        if c.in_transaction:
            c.execute("ROLLBACK")
        raise
