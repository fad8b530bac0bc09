"""Reference counts of media blobs: stored once per database, shared by every message and fork
that uses them, deleted when the last reference goes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axio_context.codec import (
    decode_content,
)

from . import chunks
from .message_rows import media_digests
from .packing import CHUNK_ERRORS, FLAG_BLOBS

__all__ = ["add_blob_refs", "digests_in_range", "drop_blob_refs"]


def add_blob_refs(c: Any, blobs: Sequence[tuple[bytes, bytes]]) -> None:
    c.executemany(
        "INSERT INTO blobs (hash, refs, data) VALUES (?, 1, ?)"
        " ON CONFLICT (hash) DO UPDATE SET refs = refs + 1",
        blobs,
    )


def drop_blob_refs(c: Any, digests: Sequence[bytes]) -> None:
    if not digests:
        return
    c.executemany("UPDATE blobs SET refs = refs - 1 WHERE hash = ?", [(d,) for d in digests])
    c.execute("DELETE FROM blobs WHERE refs <= 0")


def digests_in_range(c: Any, lo_key: int, hi_key: int) -> list[bytes]:
    """The blob digests the rows ``[lo_key, hi_key)`` reference, one per reference.

    A damaged row's digests cannot be read, so it counts for none: deleting it (a session must
    stay deletable) leaves its blobs' references in place, stored but never freed, and a fork's
    copy of it adds none.
    """
    rows = c.execute(
        "SELECT id, flags, payload FROM messages WHERE id >= ? AND id < ? AND flags & ?",
        (lo_key, hi_key, FLAG_BLOBS),
    ).fetchall()
    out: list[bytes] = []
    reader = chunks.Reader(c)
    for mid, flags, payload in rows:
        try:
            content = decode_content(reader.plain(mid, flags, payload))
        except CHUNK_ERRORS:
            continue
        out.extend(media_digests(content))
    return out
