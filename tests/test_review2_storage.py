"""Storage fixes from the second review: chunks past a size cap, and seals that failed the fold.

Real files and real FTS5; every test ends with :func:`.sqlite_checks.check_storage`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from axio_context import Message
from axio_context_sqlite import Database, SQLiteContextStore, chunks, connect
from axio_context_sqlite.chunks import CHUNK, SEAL_TAIL
from axio_context_sqlite.connection import run

from .sqlite_checks import check_storage, column, scalar, text_message, texts

#: A session this long has its first block sealable by a batch (see test_sqlite_chunks).
ONE = CHUNK + SEAL_TAIL + 4


def _chunk_positions(path: Path, session: str) -> list[int]:
    return [
        i & 0xFFFFFFFF
        for i in column(
            path, f"SELECT c.id FROM chunks c JOIN sessions s ON c.id >> 32 = s.sid WHERE s.id = '{session}'"
        )
    ]


def _bulky(i: int) -> Message:
    """~16 KB of text that compresses poorly, with a word to find it by."""
    return text_message(f"bulky{i} " + os.urandom(8000).hex())


async def _search(conn: Any, path: Path, query: str) -> list[tuple[str, int]]:
    return [(h.session_id, h.position) for h in await Database(conn, path).search(query, mode="keyword")]


# --- 2: a chunk never grows past CHUNK_BYTES, and a seal that fails fails nothing else --------------


async def test_a_block_past_the_chunk_cap_stays_unsealed(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 64 such messages make ~1 MB of MessagePack; the cap is lowered to 256 KB so the test stays
    # small (with the real cap, 64 messages of 17 MB made a chunk past SQLite's 1 GB value limit).
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 256 * 1024)
    big = [_bulky(i) for i in range(ONE)]
    small = [text_message(f"small {i}") for i in range(ONE)]
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "big").append_many(big)  # a batch: folded and sealed at once
        await SQLiteContextStore(conn, "small").append_many(small)
        assert _chunk_positions(db_path, "big") == []  # too big: its rows stay as they are
        assert _chunk_positions(db_path, "small") == [0]  # small blocks are sealed as before
        assert await _search(conn, db_path, "bulky3") == [("big", 3)]
        await Database(conn, db_path).vacuum()  # vacuum's sealing keeps to the cap too
        assert _chunk_positions(db_path, "big") == []
        assert await SQLiteContextStore(conn, "big").get_history() == big
    check_storage(db_path)


async def test_a_block_under_the_chunk_cap_is_still_sealed(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4 * 1024 * 1024)
    big = [_bulky(i) for i in range(ONE)]
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "big").append_many(big)
        assert _chunk_positions(db_path, "big") == [0]
        assert await SQLiteContextStore(conn, "big").get_history() == big
    check_storage(db_path)


async def test_a_seal_that_sqlite_refuses_fails_neither_the_fold_nor_the_append(db_path: Path) -> None:
    # A trigger makes SQLite refuse every chunk, as its value limit refused the 1 GB one: the
    # append's fold and a search's fold still commit, with their blocks left unsealed.
    messages = [text_message(f"kumquat{i}") for i in range(ONE)]
    async with connect(db_path) as conn:
        await run(
            conn,
            lambda raw: raw.execute(
                "CREATE TEMP TRIGGER refuse_chunks BEFORE INSERT ON main.chunks"
                " BEGIN SELECT RAISE(ABORT, 'string or blob too big'); END"
            ),
        )
        store = SQLiteContextStore(conn, "s")
        await store.append_many(messages)  # 64 or more: folds, and seals, in the append
        for m in messages:  # single appends, folded by the search
            await SQLiteContextStore(conn, "t").append(m)
        assert await _search(conn, db_path, "kumquat5") == [("s", 5), ("t", 5)]
        assert scalar(db_path, "SELECT COUNT(*) FROM fts_pending") == 0
        assert scalar(db_path, "SELECT COUNT(*) FROM chunks") == 0
        assert await store.get_history() == messages
        await Database(conn, db_path).vacuum()
        await run(conn, lambda raw: raw.execute("DROP TRIGGER refuse_chunks"))
        await Database(conn, db_path).vacuum()  # sealed now that it can be
        assert _chunk_positions(db_path, "s") == [0]
        assert await store.get_history() == messages
    check_storage(db_path)


async def test_a_seal_that_raises_fails_neither_the_fold_nor_the_append(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any) -> Any:
        raise MemoryError("injected")

    monkeypatch.setattr(chunks, "encode_chunk", fail)
    messages = [text_message(f"quince{i}") for i in range(ONE)]
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append_many(messages)
        for m in messages:
            await SQLiteContextStore(conn, "t").append(m)
        assert await _search(conn, db_path, "quince7") == [("s", 7), ("t", 7)]
        assert scalar(db_path, "SELECT COUNT(*) FROM chunks") == 0
        assert await store.get_history() == messages
        assert texts(await SQLiteContextStore(conn, "t").get_history()) == texts(messages)
    check_storage(db_path)
