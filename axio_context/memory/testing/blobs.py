"""The :class:`~axio_context.memory.BlobStore` contract."""

from __future__ import annotations

import hashlib
import io
from collections.abc import AsyncIterator

import pytest

from ..blobs import MAX_KEY_BYTES, BlobStore
from ..errors import BlobKeyError, BlobNotFoundError, BlobTooLargeError
from .factory import MemoryFactory

__all__ = ["BlobStoreContract"]


async def _collect(store: BlobStore, key: str, chunk_size: int) -> list[bytes]:
    return [chunk async for chunk in store.download_stream(key, chunk_size)]


class BlobStoreContract:
    """What every blob store does; subclass it and provide ``memory``."""

    @pytest.fixture
    def memory(self) -> MemoryFactory:
        raise NotImplementedError("provide a `memory` fixture returning a MemoryFactory")

    async def test_upload_download_round_trip(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        await store.connect()
        data = bytes(range(256)) * 3
        info = await store.upload("reports/a.bin", data, "application/x-test")
        assert (info.key, info.size, info.content_type) == ("reports/a.bin", 768, "application/x-test")
        assert info.sha256 == hashlib.sha256(data).hexdigest()
        assert await store.download("reports/a.bin") == (data, "application/x-test")
        assert await store.stat("reports/a.bin") == info
        assert await store.stat("nothing") is None
        await store.disconnect()

    async def test_default_content_type_and_empty_blob(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        await store.upload("empty", b"")
        assert await store.download("empty") == (b"", "application/octet-stream")
        assert await _collect(store, "empty", 10) == []

    async def test_upload_replaces(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        await store.upload("k", b"one", "text/plain")
        await store.upload("k", b"two!", "text/markdown")
        assert await store.download("k") == (b"two!", "text/markdown")
        assert [i.size for i in await store.list_keys()] == [4]

    async def test_delete(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        await store.upload("k", b"data")
        assert await store.delete("k") is True
        assert await store.delete("k") is False
        with pytest.raises(BlobNotFoundError, match="'k'"):
            await store.download("k")
        with pytest.raises(BlobNotFoundError):
            await _collect(store, "k", 4)

    async def test_same_bytes_under_two_keys(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        a = await store.upload("a", b"shared bytes")
        b = await store.upload("b", b"shared bytes", "text/plain")
        assert a.sha256 == b.sha256
        await store.delete("a")
        assert await store.download("b") == (b"shared bytes", "text/plain")
        await store.upload("b", b"other")  # b lets go of the shared bytes too
        await store.upload("c", b"shared bytes")
        assert await store.download("c") == (b"shared bytes", "application/octet-stream")

    async def test_list_by_prefix(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        for key in ("logs/b", "logs/a", "logsx", "other/a", "logs/c/d"):
            await store.upload(key, key.encode())
        assert [i.key for i in await store.list_keys("logs/")] == ["logs/a", "logs/b", "logs/c/d"]
        assert [i.key for i in await store.list_keys("logs/", limit=2)] == ["logs/a", "logs/b"]
        assert len(await store.list_keys()) == 5
        assert await store.list_keys("zzz") == []

    async def test_bad_keys_are_refused(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        for bad in ("", "a\x00b", "x" * (MAX_KEY_BYTES + 1), "é" * (MAX_KEY_BYTES // 2 + 1)):
            with pytest.raises(BlobKeyError):
                await store.upload(bad, b"data")
            with pytest.raises(BlobKeyError):
                await store.upload_stream(bad, [b"data"])
        await store.upload("x" * MAX_KEY_BYTES, b"longest key")
        assert [i.size for i in await store.list_keys()] == [11]

    async def test_size_limit(self, memory: MemoryFactory) -> None:
        store = await memory.blobs(max_size=1000)
        await store.upload("k", b"old")
        with pytest.raises(BlobTooLargeError, match="1,000"):
            await store.upload("k", b"x" * 1001)
        with pytest.raises(BlobTooLargeError):
            await store.upload_stream("k", [b"x" * 600, b"x" * 600])
        assert await store.download("k") == (b"old", "application/octet-stream")
        await store.upload("full", b"x" * 1000)

    async def test_streams(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        data = hashlib.sha256(b"seed").digest() * 100_000  # 3.2 MB: several pieces

        async def agen() -> AsyncIterator[bytes]:
            for start in range(0, len(data), 777_777):
                yield data[start : start + 777_777]

        info = await store.upload_stream("async", agen(), "video/mp4")
        assert (info.size, info.sha256) == (len(data), hashlib.sha256(data).hexdigest())
        await store.upload_stream("file", io.BytesIO(data))
        await store.upload_stream("bytes", data)
        await store.upload_stream("iter", iter([data[:10], data[10:]]))
        for key in ("async", "file", "bytes", "iter"):
            chunks = await _collect(store, key, 500_000)
            assert all(len(c) <= 500_000 for c in chunks)
            assert b"".join(chunks) == data
            assert (await store.download(key))[0] == data
        assert (await store.download("async"))[1] == "video/mp4"

    async def test_presigned_url_opens(self, memory: MemoryFactory) -> None:
        store = await memory.blobs()
        await store.upload("dir/file name.txt", b"hello", "text/plain")
        url = await store.presign_url("dir/file name.txt")
        assert await memory.open_url(store, url) == (b"hello", "text/plain")
        with pytest.raises(BlobNotFoundError):
            await store.presign_url("missing")

    async def test_list_keys_at_the_edges_of_unicode_and_of_64_bits(self, memory: MemoryFactory) -> None:
        # A prefix ending in U+D7FF (its next code point is a surrogate) or in U+10FFFF, a prefix
        # that is no text (a lone surrogate), and limits past SQL's integers: every store alike.
        store = await memory.blobs()
        for key in ("a\ud7ff", "a\ud7ffz", "a\ue000", "b\U0010ffff", "b\U0010ffffx", "c"):
            await store.upload(key, b"x")
        assert [b.key for b in await store.list_keys("a\ud7ff")] == ["a\ud7ff", "a\ud7ffz"]
        assert [b.key for b in await store.list_keys("b\U0010ffff")] == ["b\U0010ffff", "b\U0010ffffx"]
        assert await store.list_keys("a\ud800") == []
        assert len(await store.list_keys(limit=2**63)) == 6
        assert len(await store.list_keys("", limit=2**64)) == 6
