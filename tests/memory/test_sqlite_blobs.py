"""The SQLite blob store beyond the contract: bytes shared with messages' media, pieces, streaming
without whole-file copies, URLs."""

from __future__ import annotations

import hashlib
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from axio_context import ImageBlock, Message, TextBlock
from axio_context.memory import BlobNotFoundError, InvalidInputError
from axio_context.memory.blobs import CHUNK_SIZE
from axio_context_sqlite import Connection, SQLiteContextStore, connect
from axio_context_sqlite.memory import SQLiteBlobStore, open_blob_url


def _image(data: bytes) -> Message:
    return Message(
        role="user", content=[TextBlock(text="look"), ImageBlock(media_type="image/png", data=data)]
    )


async def _rows(conn: Connection, sql: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in await conn.execute_fetchall(sql)]


def _pattern(size: int) -> bytes:
    seed = hashlib.sha256(str(size).encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


@pytest.mark.parametrize("size", [5_000, 3 * CHUNK_SIZE + 17], ids=["one-row", "pieces"])
async def test_message_first_then_key(conn: Connection, size: int) -> None:
    data = _pattern(size)
    session = SQLiteContextStore(conn, "s1")
    await session.append(_image(data))
    blobs = SQLiteBlobStore(conn)
    await blobs.upload("photo.png", data, "image/png")
    assert await _rows(conn, "SELECT refs, length(data) FROM blobs") == [(2, size)]  # stored once
    assert await _rows(conn, "SELECT COUNT(*) FROM memory_blob_chunks") == [(0,)]
    await session.delete_session()
    assert await blobs.download("photo.png") == (data, "image/png")
    assert await blobs.delete("photo.png")
    assert await _rows(conn, "SELECT COUNT(*) FROM blobs") == [(0,)]


@pytest.mark.parametrize("size", [5_000, 3 * CHUNK_SIZE + 17], ids=["one-row", "pieces"])
async def test_key_first_then_message(conn: Connection, size: int) -> None:
    data = _pattern(size)
    blobs = SQLiteBlobStore(conn)
    await blobs.upload("photo.png", data, "image/png")
    await blobs.upload("copy.png", data, "image/png")
    session = SQLiteContextStore(conn, "s1")
    await session.append(_image(data))  # the message's reference joins pieces into one row
    [(refs, length)] = await _rows(conn, "SELECT refs, length(data) FROM blobs")
    assert (refs, length) == (3, size)
    assert await _rows(conn, "SELECT COUNT(*) FROM memory_blob_chunks") == [(0,)]
    [message] = await session.get_history()
    assert message.content[1] == ImageBlock(media_type="image/png", data=data)
    assert await blobs.delete("photo.png") and await blobs.delete("copy.png")
    [message] = await SQLiteContextStore(conn, "s1").get_history()  # the message still holds it
    assert message.content[1] == ImageBlock(media_type="image/png", data=data)
    await session.delete_session()
    assert await _rows(conn, "SELECT COUNT(*) FROM blobs") == [(0,)]


async def test_pieces_are_freed_with_the_last_key(conn: Connection) -> None:
    blobs = SQLiteBlobStore(conn)
    data = _pattern(2 * CHUNK_SIZE + 1)
    await blobs.upload("a", data)
    await blobs.upload("b", data)
    assert await _rows(conn, "SELECT refs FROM blobs") == [(2,)]
    assert await _rows(conn, "SELECT COUNT(*) FROM memory_blob_chunks") == [(3,)]
    await blobs.upload("a", b"small now")  # replacing a key releases its old bytes
    await blobs.delete("b")
    assert await _rows(conn, "SELECT COUNT(*) FROM memory_blob_chunks") == [(0,)]
    assert await _rows(conn, "SELECT refs, data FROM blobs") == [(1, b"small now")]


async def test_large_upload_and_download_never_hold_the_file(conn: Connection) -> None:
    size = 40 * CHUNK_SIZE + 5
    piece = _pattern(256 * 1024)
    blobs = SQLiteBlobStore(conn)

    async def source() -> AsyncIterator[bytes]:
        sent = 0
        while sent < size:
            chunk = piece[: size - sent]
            sent += len(chunk)
            yield chunk

    expected = hashlib.sha256()
    for start in range(0, size, len(piece)):
        expected.update(piece[: size - start])

    tracemalloc.start()
    try:
        info = await blobs.upload_stream("big.bin", source())
        _, upload_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        got = hashlib.sha256()
        async for chunk in blobs.download_stream("big.bin"):
            got.update(chunk)
        _, download_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (info.size, info.sha256) == (size, expected.hexdigest())
    assert got.hexdigest() == expected.hexdigest()
    assert upload_peak < 8 * CHUNK_SIZE, upload_peak  # a few pieces at a time, not 40 MB
    assert download_peak < 8 * CHUNK_SIZE, download_peak
    assert await _rows(conn, "SELECT COUNT(*) FROM memory_blob_chunks") == [(41,)]


async def test_too_large_stream_leaves_nothing(conn: Connection) -> None:
    blobs = SQLiteBlobStore(conn, max_size=3 * CHUNK_SIZE)

    def source() -> Iterator[bytes]:
        for _ in range(5):
            yield b"x" * CHUNK_SIZE

    with pytest.raises(Exception, match="larger than this store's limit"):
        await blobs.upload_stream("big", source())
    assert await _rows(conn, "SELECT COUNT(*) FROM blobs") == [(0,)]
    assert await _rows(conn, "SELECT COUNT(*) FROM memory_blob_keys") == [(0,)]


async def test_survives_reopening(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteBlobStore(conn).upload("k", _pattern(2 * CHUNK_SIZE), "application/pdf")
    async with connect(db_path) as conn:
        assert await SQLiteBlobStore(conn).download("k") == (_pattern(2 * CHUNK_SIZE), "application/pdf")


async def test_presigned_url(conn: Connection, db_path: Path) -> None:
    blobs = SQLiteBlobStore(conn)
    await blobs.upload("a/b c?.txt", b"hi", "text/plain")
    url = await blobs.presign_url("a/b c?.txt", expires_in=60)
    assert url.startswith("axio-blob://")
    assert unquote(url).startswith(f"axio-blob://{db_path}?key=")
    assert await open_blob_url(url) == (b"hi", "text/plain")
    expired = await blobs.presign_url("a/b c?.txt", expires_in=-10)
    with pytest.raises(InvalidInputError, match="expired"):
        await open_blob_url(expired)
    await blobs.delete("a/b c?.txt")
    with pytest.raises(BlobNotFoundError):
        await open_blob_url(url)
    for bad in ("http://x", "axio-blob:///tmp/x.db", "axio-blob:///tmp/x.db?key=a&expires=soon"):
        with pytest.raises(InvalidInputError):
            await open_blob_url(bad)
