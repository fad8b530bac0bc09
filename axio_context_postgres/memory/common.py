"""What the PostgreSQL memory stores share: a transaction on the pool with the driver's errors
made into this package's named ones, the clock, and JSON for metadata and properties."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import msgspec

from ..connection import Pool, translated

__all__ = ["WHERE", "decode_json", "encode_json", "now_ms", "transaction"]

#: How errors name where they happened.
WHERE: Final = "PostgreSQL memory store"

_ENCODER: Final = msgspec.json.Encoder()
_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])


def encode_json(value: Any) -> str:
    """``value`` as JSON text (what a ``jsonb`` parameter takes)."""
    return _ENCODER.encode(value).decode()


def decode_json(text: str) -> dict[str, Any]:
    """A JSON object read back from a ``jsonb`` column's text."""
    return _OBJECT.decode(text)


def now_ms() -> int:
    """Unix time in milliseconds, as every table of this backend keeps time."""
    return time.time_ns() // 1_000_000


@asynccontextmanager
async def transaction(pool: Pool, *, readonly: bool = False) -> AsyncIterator[Any]:
    """A connection from ``pool`` inside one transaction (a snapshot when ``readonly``)."""
    async with translated(WHERE), pool.acquire() as conn:
        if readonly:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                yield conn
        else:
            async with conn.transaction():
                yield conn
