"""Signed blob URLs on both backends: a URL opens until it expires; editing its key or expiry,
dropping its signature, or taking it to another database is refused with one line, and the
secret it is signed with lives in the database (a URL made by one connection opens in another)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from axio_context.memory.blobs_sql import SQLBlobStore
from axio_context.memory.errors import InvalidInputError
from axio_context_postgres import connect as pg_connect
from axio_context_postgres.memory import PostgresBlobStore
from axio_context_sqlite import connect
from axio_context_sqlite.memory import SQLiteBlobStore, open_blob_url
from tests.support.postgres import create_database, new_database


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "blobs.db")
    return new_database(request.getfixturevalue("pg_server"), "axio_blob_urls")


async def _open(store: SQLBlobStore, url: str) -> tuple[bytes, str]:
    if isinstance(store, SQLiteBlobStore):
        return await open_blob_url(url)  # the file opened again, read-only
    return await store.open_url(url)


@pytest.fixture
async def store(where: str) -> AsyncIterator[SQLBlobStore]:
    if where.startswith("postgresql://"):
        pool = await pg_connect(where, min_size=1, max_size=2)
        try:
            yield PostgresBlobStore(pool)
        finally:
            await pool.close()
        return
    async with connect(where) as conn:
        yield SQLiteBlobStore(conn)


async def test_a_signed_url_opens_and_an_edited_one_does_not(store: SQLBlobStore) -> None:
    await store.upload("notes/a.txt", b"hello", "text/plain")
    await store.upload("notes/b.txt", b"secret", "text/plain")
    url = await store.presign_url("notes/a.txt", expires_in=60)
    assert re.search(r"[?&]sig=[0-9a-f]{64}$", url)
    assert await _open(store, url) == (b"hello", "text/plain")
    expires = int(re.findall(r"expires=(\d+)", url)[0])
    edits = {
        "later expiry": url.replace(f"expires={expires}", f"expires={expires + 10**6}"),
        "other key": url.replace("notes%2Fa.txt", "notes%2Fb.txt"),
        "no signature": re.sub(r"&sig=[0-9a-f]+", "", url),
        "no expiry": re.sub(r"&expires=\d+", "", url),
        "forged signature": re.sub(r"sig=[0-9a-f]+", "sig=" + "0" * 64, url),
    }
    for what, edited in edits.items():
        with pytest.raises(InvalidInputError, match=r"signature|needs one") as caught:
            await _open(store, edited)
        assert "\n" not in str(caught.value), what


async def test_an_expired_url_is_refused(store: SQLBlobStore) -> None:
    await store.upload("k", b"x")
    expired = await store.presign_url("k", expires_in=-10)
    with pytest.raises(InvalidInputError, match="expired at"):
        await _open(store, expired)
    for bad in (True, 1.5, 10**10):
        with pytest.raises(InvalidInputError, match="expires_in"):
            await store.presign_url("k", expires_in=bad)  # type: ignore[arg-type]


async def test_a_url_opens_through_another_pool_and_not_on_another_database(pg_server: Any) -> None:
    pool = await pg_connect(await create_database(pg_server, "axio_blob_here"), min_size=1, max_size=1)
    other = await pg_connect(await create_database(pg_server, "axio_blob_other"), min_size=1, max_size=1)
    try:
        await PostgresBlobStore(pool).upload("k", b"x", "application/octet-stream")
        url = await PostgresBlobStore(pool).presign_url("k")
        assert await PostgresBlobStore(pool).open_url(url) == (b"x", "application/octet-stream")
        with pytest.raises(InvalidInputError, match="another database"):
            await PostgresBlobStore(other).open_url(url)
    finally:
        await pool.close()
        await other.close()


async def test_a_sqlite_url_pointed_at_another_file_is_refused(tmp_path: Path) -> None:
    async with connect(tmp_path / "one.db") as one, connect(tmp_path / "two.db") as two:
        await SQLiteBlobStore(one).upload("k", b"one")
        await SQLiteBlobStore(two).upload("k", b"two")
        await SQLiteBlobStore(two).presign_url("k")  # the other file has a secret of its own
        url = await SQLiteBlobStore(one).presign_url("k")
    moved = url.replace("one.db", "two.db")
    with pytest.raises(InvalidInputError, match="signature does not match"):
        await open_blob_url(moved)
