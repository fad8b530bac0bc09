"""The blob store (ravi's ``BlobStore`` / ``InMemoryFileStore``): files an agent produced, by key.

``upload(key, data, content_type)`` stores bytes under a key (replacing what it held),
``download(key)`` gives ``(bytes, content_type)``, ``delete(key)`` removes it, ``list_keys(prefix)``
lists, and ``presign_url(key)`` gives a URL that this package can open again
(:class:`InMemoryFileStore`: ``memory://<key>``, as ravi's; the SQLite store:
``axio-blob://...``, opened by :func:`axio_context_sqlite.memory.open_blob_url`).
``connect``/``disconnect`` exist so the stores drop in where ravi's S3 store is expected.

Large files stream: :meth:`BlobStore.upload_stream` takes bytes, a binary file, or an (async)
iterable of chunks; :meth:`BlobStore.download_stream` yields chunks. A blob larger than the store's
``max_size`` is a :class:`~.errors.BlobTooLargeError` and nothing is stored; a key that is empty,
longer than :data:`MAX_KEY_BYTES` UTF-8 bytes or holds a NUL is a :class:`~.errors.BlobKeyError`.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import IO, Any, Final, Protocol, TypeAlias, runtime_checkable
from urllib.parse import quote, unquote

import msgspec

from ..terminal import UNSAFE
from .errors import BlobKeyError, BlobNotFoundError, BlobTooLargeError, InvalidInputError

__all__ = [
    "CHUNK_SIZE",
    "DEFAULT_CONTENT_TYPE",
    "DEFAULT_MAX_SIZE",
    "MAX_KEY_BYTES",
    "BlobInfo",
    "BlobSource",
    "BlobStore",
    "InMemoryFileStore",
    "check_content_type",
    "check_key",
    "chunks_of",
]

#: Longest key, in UTF-8 bytes (S3's limit).
MAX_KEY_BYTES: Final = 1024
#: Largest blob a store takes unless told otherwise.
DEFAULT_MAX_SIZE: Final = 512 * 1024 * 1024
#: Bytes read, written and yielded at a time when streaming.
CHUNK_SIZE: Final = 1024 * 1024
DEFAULT_CONTENT_TYPE: Final = "application/octet-stream"

#: What ``upload_stream`` reads: bytes, a binary file, or an iterable / async iterable of chunks.
BlobSource: TypeAlias = "bytes | bytearray | memoryview | IO[bytes] | Iterable[bytes] | AsyncIterable[bytes]"


class BlobInfo(msgspec.Struct, frozen=True):
    """A stored blob: its key, size in bytes, content type and SHA-256 (hex)."""

    key: str
    size: int
    content_type: str
    sha256: str


@runtime_checkable
class BlobStore(Protocol):
    """Bytes by key, with a content type (ravi's ``BlobStore``)."""

    async def connect(self) -> None:
        """Make the store ready (a no-op where nothing needs opening)."""
        ...

    async def disconnect(self) -> None:
        """Release what :meth:`connect` took (the caller's own connection stays open)."""
        ...

    async def upload(self, key: str, data: bytes, content_type: str = DEFAULT_CONTENT_TYPE) -> BlobInfo:
        """Store ``data`` under ``key``, replacing what the key held."""
        ...

    async def upload_stream(
        self, key: str, source: BlobSource, content_type: str = DEFAULT_CONTENT_TYPE
    ) -> BlobInfo:
        """:meth:`upload` reading ``source`` chunk by chunk (never all of it at once)."""
        ...

    async def download(self, key: str) -> tuple[bytes, str]:
        """``(data, content_type)`` stored under ``key``; :class:`BlobNotFoundError` if none."""
        ...

    def download_stream(self, key: str, chunk_size: int = CHUNK_SIZE) -> AsyncIterator[bytes]:
        """The blob under ``key`` in chunks of at most ``chunk_size`` bytes."""
        ...

    async def stat(self, key: str) -> BlobInfo | None:
        """What is stored under ``key``, without its bytes; None if nothing."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True if it existed. Its bytes go once nothing else holds them."""
        ...

    async def list_keys(self, prefix: str = "", *, limit: int | None = None) -> list[BlobInfo]:
        """The blobs whose keys start with ``prefix``, by key."""
        ...

    async def presign_url(self, key: str, expires_in: int = 3600) -> str:
        """A URL for the blob under ``key`` that this package can open."""
        ...


def check_key(key: str) -> str:
    """``key`` if it is a usable blob key; :class:`BlobKeyError` names what is wrong."""
    if not isinstance(key, str):
        raise BlobKeyError(f"a blob key is a string, got {type(key).__name__}")
    if not key:
        raise BlobKeyError("a blob key cannot be empty")
    if "\x00" in key:
        raise BlobKeyError("a blob key cannot hold a NUL character")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise BlobKeyError("a blob key must be valid Unicode (it holds a lone surrogate)") from None
    if size > MAX_KEY_BYTES:
        raise BlobKeyError(f"a blob key is at most {MAX_KEY_BYTES} bytes of UTF-8, got {size}")
    return key


def check_content_type(content_type: str) -> str:
    """``content_type`` if it is a usable one (a short string without control characters)."""
    if not isinstance(content_type, str) or not content_type or len(content_type) > 255:
        raise InvalidInputError(f"a content type is a string of 1-255 characters, got {content_type!r}")
    if UNSAFE.search(content_type):  # C0, DEL, C1 or bidi: what a terminal would act on
        raise InvalidInputError(f"content type {content_type!r} holds a control character")
    return content_type


def check_max_size(max_size: int) -> int:
    """``max_size`` if it is a usable size limit."""
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 0:
        raise InvalidInputError(f"max_size is a whole number of bytes >= 0, got {max_size!r}")
    return max_size


def too_large(key: str, max_size: int) -> BlobTooLargeError:
    """The error for a blob under ``key`` that passed ``max_size`` bytes."""
    return BlobTooLargeError(f"blob {key!r} is larger than this store's limit of {max_size:,} bytes")


async def chunks_of(source: BlobSource, chunk_size: int = CHUNK_SIZE) -> AsyncIterator[bytes]:
    """``source`` as chunks: bytes are sliced, files read (on a thread), iterables passed on."""
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source)
        for start in range(0, len(view), chunk_size):
            yield bytes(view[start : start + chunk_size])
        return
    if isinstance(source, AsyncIterable):
        async for chunk in source:
            yield _as_bytes(chunk)
        return
    read = getattr(source, "read", None)
    if callable(read):
        while True:
            chunk = await asyncio.to_thread(read, chunk_size)
            if not chunk:
                return
            yield _as_bytes(chunk)
    if isinstance(source, Iterable):
        for chunk in source:
            yield _as_bytes(chunk)
        return
    raise InvalidInputError(f"cannot read blob data from a {type(source).__name__}")


def _as_bytes(chunk: Any) -> bytes:
    if isinstance(chunk, bytes):
        return chunk
    if isinstance(chunk, bytearray | memoryview):
        return bytes(chunk)
    raise InvalidInputError(f"blob data chunks are bytes, got {type(chunk).__name__}")


def memory_url(key: str) -> str:
    """The ``memory://`` URL :class:`InMemoryFileStore` gives for ``key``."""
    return "memory://" + quote(key, safe="/")


def key_of_memory_url(url: str) -> str:
    """The key a ``memory://`` URL names."""
    if not url.startswith("memory://"):
        raise InvalidInputError(f"not a memory:// URL: {url!r}")
    return unquote(url[len("memory://") :])


class InMemoryFileStore:
    """:class:`BlobStore` in a dict (ravi's name): for tests, and where nothing must persist.

    Same bytes under two keys are kept once (by SHA-256), as the SQLite store does.
    """

    def __init__(self, *, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self._max_size = check_max_size(max_size)
        self._keys: dict[str, tuple[str, str]] = {}  # key -> (sha256 hex, content type)
        self._data: dict[str, bytes] = {}  # sha256 hex -> bytes
        self._refs: dict[str, int] = {}

    @property
    def max_size(self) -> int:
        """The largest blob this store takes, in bytes."""
        return self._max_size

    async def connect(self) -> None:
        """Nothing to open."""

    async def disconnect(self) -> None:
        """Nothing to close."""

    def _put(self, key: str, data: bytes, content_type: str) -> BlobInfo:
        digest = hashlib.sha256(data).hexdigest()
        self._release(key)
        self._keys[key] = (digest, content_type)
        self._data.setdefault(digest, data)
        self._refs[digest] = self._refs.get(digest, 0) + 1
        return BlobInfo(key, len(data), content_type, digest)

    def _release(self, key: str) -> bool:
        old = self._keys.pop(key, None)
        if old is None:
            return False
        left = self._refs[old[0]] - 1
        if left:
            self._refs[old[0]] = left
        else:
            del self._refs[old[0]], self._data[old[0]]
        return True

    async def upload(self, key: str, data: bytes, content_type: str = DEFAULT_CONTENT_TYPE) -> BlobInfo:
        """Store ``data`` under ``key``, replacing what the key held."""
        check_key(key)
        check_content_type(content_type)
        data = _as_bytes(data)
        if len(data) > self._max_size:
            raise too_large(key, self._max_size)
        return self._put(key, data, content_type)

    async def upload_stream(
        self, key: str, source: BlobSource, content_type: str = DEFAULT_CONTENT_TYPE
    ) -> BlobInfo:
        """:meth:`upload` reading ``source`` chunk by chunk (kept in memory: this is the memory store)."""
        check_key(key)
        check_content_type(content_type)
        parts: list[bytes] = []
        size = 0
        async for chunk in chunks_of(source):
            size += len(chunk)
            if size > self._max_size:
                raise too_large(key, self._max_size)
            parts.append(chunk)
        return self._put(key, b"".join(parts), content_type)

    async def download(self, key: str) -> tuple[bytes, str]:
        """``(data, content_type)`` stored under ``key``; :class:`BlobNotFoundError` if none."""
        check_key(key)
        found = self._keys.get(key)
        if found is None:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        return self._data[found[0]], found[1]

    async def download_stream(self, key: str, chunk_size: int = CHUNK_SIZE) -> AsyncIterator[bytes]:
        """The blob under ``key`` in chunks of at most ``chunk_size`` bytes."""
        if chunk_size < 1:
            raise InvalidInputError(f"chunk_size is >= 1, got {chunk_size}")
        data, _ = await self.download(key)
        for start in range(0, len(data), chunk_size):
            yield data[start : start + chunk_size]

    async def stat(self, key: str) -> BlobInfo | None:
        """What is stored under ``key``, without its bytes; None if nothing."""
        check_key(key)
        found = self._keys.get(key)
        if found is None:
            return None
        return BlobInfo(key, len(self._data[found[0]]), found[1], found[0])

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True if it existed. Its bytes go once no other key holds them."""
        check_key(key)
        return self._release(key)

    async def list_keys(self, prefix: str = "", *, limit: int | None = None) -> list[BlobInfo]:
        """The blobs whose keys start with ``prefix``, by key."""
        keys = sorted(k for k in self._keys if k.startswith(prefix))
        if limit is not None:
            keys = keys[: max(limit, 0)]
        out = []
        for k in keys:
            digest, content_type = self._keys[k]
            out.append(BlobInfo(k, len(self._data[digest]), content_type, digest))
        return out

    async def presign_url(self, key: str, expires_in: int = 3600) -> str:
        """``memory://<key>`` (ravi's form); :meth:`open_url` reads it back. No expiry in memory."""
        check_key(key)
        if key not in self._keys:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        return memory_url(key)

    async def open_url(self, url: str) -> tuple[bytes, str]:
        """``(data, content_type)`` for a URL :meth:`presign_url` gave."""
        return await self.download(key_of_memory_url(url))
