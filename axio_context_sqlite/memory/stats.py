"""How much the memory stores hold, and their size on disk (for ``axio-context stats``)."""

from __future__ import annotations

from typing import Any, Final

import aiosqlite
import msgspec

from ..store.calls import run
from ..store.transactions import read_tx

__all__ = ["MemoryStats", "memory_stats"]

#: The tables (and their indexes) of each store, for the size on disk.
_TABLES: Final = {
    "vectors": ("memory_collections", "memory_documents", "memory_embeddings"),
    "blobs": ("memory_blob_keys", "memory_blob_chunks", "memory_blob_keys_by_hash"),
    "graph": ("graph_entities", "graph_relationships"),
    "tasks": ("task_lists", "tasks"),
}


class MemoryStats(msgspec.Struct, frozen=True):
    """Counts of what the memory stores hold and the bytes their tables and indexes take.

    ``blob_bytes`` is the size of the distinct bytes the keys hold (stored once, in the shared
    ``blobs`` table, also counted by the session statistics' media when messages share them).
    """

    collections: int
    documents: int
    vector_bytes: int
    blob_keys: int
    blob_bytes: int
    blob_key_bytes: int
    entities: int
    relationships: int
    graph_bytes: int
    task_lists: int
    tasks: int
    task_bytes: int


def _bytes(c: Any, names: tuple[str, ...]) -> int:
    marks = ", ".join("?" * len(names))
    try:
        row = c.execute(
            f"SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN ({marks})"
            f" OR name IN (SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ({marks}))",
            (*names, *names),
        ).fetchone()
    except Exception:  # a SQLite built without the dbstat table: no sizes, counts still right
        return 0
    return int(row[0])


def _stats(c: Any) -> MemoryStats:
    def one(sql: str) -> int:
        return int(c.execute(sql).fetchone()[0])

    with read_tx(c):
        return MemoryStats(
            collections=one("SELECT COUNT(*) FROM memory_collections"),
            documents=one("SELECT COUNT(*) FROM memory_documents"),
            vector_bytes=_bytes(c, _TABLES["vectors"]),
            blob_keys=one("SELECT COUNT(*) FROM memory_blob_keys"),
            blob_bytes=one(
                "SELECT COALESCE(SUM(size), 0) FROM (SELECT DISTINCT hash, size FROM memory_blob_keys)"
            ),
            blob_key_bytes=_bytes(c, _TABLES["blobs"]),
            entities=one("SELECT COUNT(*) FROM graph_entities"),
            relationships=one("SELECT COUNT(*) FROM graph_relationships"),
            graph_bytes=_bytes(c, _TABLES["graph"]),
            task_lists=one("SELECT COUNT(*) FROM task_lists"),
            tasks=one("SELECT COUNT(*) FROM tasks"),
            task_bytes=_bytes(c, _TABLES["tasks"]),
        )


async def memory_stats(conn: aiosqlite.Connection) -> MemoryStats:
    """What the memory stores in ``conn``'s database hold, and their size on disk."""
    return await run(conn, _stats)
