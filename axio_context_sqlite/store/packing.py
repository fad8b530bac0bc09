"""Payload encoding: how a payload (MessagePack) is compressed and stored, and the frame of a
sealed chunk (the sealing policy is in :mod:`.chunks`; a message's row is :mod:`.message_rows`).

The payload is the MessagePack of the content blocks (the shared codec). Payloads of
``COMPRESS_MIN`` bytes or more are Zstandard-compressed when that makes them smaller; below it
the CPU cost buys too little (measured on agent transcripts: ~100 bytes saved per 256-byte
payload for ~25 us, ~300 bytes per 512-byte payload, 2-4 KB per 4 KB tool result). Zstandard
over zlib, measured on the same payloads: a slightly better ratio (0.34 vs 0.35), half the time
to compress and 60% of the time to decompress, which is most of a long session's load time
after decoding itself. Rows flagged zlib (``FLAG_ZLIB``) are still read. When a message holds
media of ``BLOB_MIN`` bytes or more, every media block's bytes are replaced by their SHA-256
digest and stored once in the ``blobs`` table, shared by every message and fork that uses them.

Zstandard dictionaries: builds before this one trained a dictionary per database once it held
64 compressed payloads, stored it in ``zstd_dicts`` and recorded its id in the flags of what it
compressed (``flags >> DICT_SHIFT``). They bought 12% of the file at 2,000 messages and nothing
at 10,000 (sealed chunks compress whole runs together), for 235 lines and retry paths, so new
payloads are plain zstd; those rows still read, through a :class:`DictionaryReader` bound to the
connection's worker thread (see :func:`bind`), and ``vacuum --recompress`` rewrites them.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Sequence
from typing import Any, Final

import msgspec
import zstandard

from axio_context.blocks import ContentBlock
from axio_context.errors import DecodeError

__all__ = [
    "BLOB_MIN",
    "CHUNK",
    "CHUNK_ERRORS",
    "COMPRESS_MIN",
    "DICT_SHIFT",
    "FLAG_BLOBS",
    "FLAG_SEALED",
    "FLAG_ZLIB",
    "FLAG_ZSTD",
    "PAYLOAD_ERRORS",
    "ROW_ERRORS",
    "ChunkEntry",
    "DictionaryReader",
    "bind",
    "bound",
    "bound_or_none",
    "decode_chunk",
    "decode_chunk_content",
    "encode_chunk",
    "inflate",
    "pack",
    "rebind",
    "recompress",
    "unbind",
    "unzstd",
]

COMPRESS_MIN: Final = 512
ZSTD_LEVEL: Final = 3  # zstd's default: level 1 is no faster on payloads this small
BLOB_MIN: Final = 1024

FLAG_ZLIB: Final = 1  # written by earlier development builds; read, never written
FLAG_BLOBS: Final = 2
FLAG_ZSTD: Final = 4
#: The payload is in the message's chunk (see :mod:`.chunks`); the row's payload is empty.
FLAG_SEALED: Final = 8
#: ``flags >> DICT_SHIFT`` is the ``zstd_dicts`` row a FLAG_ZSTD payload written by an earlier
#: build needs (0: none); read, never written.
DICT_SHIFT: Final = 8

#: What a damaged compressed payload raises.
PAYLOAD_ERRORS: Final = (zlib.error, zstandard.ZstdError)
#: What reading a damaged stored row raises anywhere on its way back to a message: the
#: decompression, the MessagePack, an unknown role code, a field of the wrong type.
ROW_ERRORS: Final = (*PAYLOAD_ERRORS, DecodeError, IndexError, TypeError)

# (De)compression contexts are reused per thread: they are not thread-safe, and making one per
# call costs a third of a small payload's decompression.
_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    c: zstandard.ZstdCompressor | None = getattr(_local, "c", None)
    if c is None:
        c = _local.c = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return c


def unzstd(payload: bytes) -> bytes:
    """Decompress a FLAG_ZSTD payload made without a dictionary."""
    d: zstandard.ZstdDecompressor | None = getattr(_local, "d", None)
    if d is None:
        d = _local.d = zstandard.ZstdDecompressor()
    return d.decompress(payload)


def inflate(flags: int, payload: bytes) -> bytes:
    """A stored payload's MessagePack bytes, whatever compression its flags say.

    A payload an earlier build compressed with a dictionary is read through the dictionaries
    bound to this thread (:func:`bind`).
    """
    if flags & FLAG_ZSTD:
        if flags >> DICT_SHIFT:
            return bound().decompressor(flags >> DICT_SHIFT).decompress(payload)
        return unzstd(payload)
    if flags & FLAG_ZLIB:
        return zlib.decompress(payload)
    return payload


class DictionaryReader:
    """The Zstandard dictionaries of one database, read-only: what rows and chunks written by
    earlier builds (flagged with a dictionary id) are decompressed with.

    Each is loaded from ``zstd_dicts`` on first use, on the connection's own thread.
    """

    def __init__(self, db: Any) -> None:
        self._db = db
        self._local = threading.local()  # decompressors are not thread-safe

    def _dictionary(self, dict_id: int) -> zstandard.ZstdCompressionDict:
        try:
            row = self._db.execute("SELECT data FROM zstd_dicts WHERE id = ?", (dict_id,)).fetchone()
        except Exception as exc:  # a read-only connection to a pre-version-4 file
            if "no such table" not in str(exc):
                raise
            row = None
        if row is None:
            raise DecodeError(f"compression dictionary {dict_id} is missing")
        try:
            d = zstandard.ZstdCompressionDict(bytes(row[0]), dict_type=zstandard.DICT_TYPE_FULLDICT)
            d.precompute_compress(level=ZSTD_LEVEL)  # validates it: damage is named here, not later
        except zstandard.ZstdError as exc:
            raise DecodeError(f"compression dictionary {dict_id} is damaged ({exc})") from None
        return d

    def decompressor(self, dict_id: int) -> zstandard.ZstdDecompressor:
        """This thread's decompressor for dictionary ``dict_id`` (loaded on first use)."""
        cache: dict[int, zstandard.ZstdDecompressor] | None = getattr(self._local, "d", None)
        if cache is None:
            cache = self._local.d = {}
        d = cache.get(dict_id)
        if d is None:
            d = cache[dict_id] = zstandard.ZstdDecompressor(dict_data=self._dictionary(dict_id))
        return d

    def inflate(self, flags: int, payload: bytes) -> bytes:
        """A stored payload's MessagePack bytes, a dictionary's read through this object (not
        the thread's bound one, as the module's :func:`inflate` does)."""
        dict_id = flags >> DICT_SHIFT
        return self.decompressor(dict_id).decompress(payload) if dict_id else inflate(flags, payload)


def recompress(reader: DictionaryReader, flags: int, payload: bytes) -> tuple[int, bytes]:
    """A stored row's ``(flags, payload)`` encoded as a new one would be (:func:`pack`); the
    blobs flag is kept."""
    zflags, packed = pack(reader.inflate(flags, payload))
    return flags & FLAG_BLOBS | zflags, packed


def pack(payload: bytes) -> tuple[int, bytes]:
    """``(compression flags, bytes)`` to store a MessagePack payload as: zstd from
    ``COMPRESS_MIN`` bytes, as it is below that or when compressing does not make it smaller."""
    if len(payload) < COMPRESS_MIN:
        return 0, payload
    packed = _compressor().compress(payload)
    return (FLAG_ZSTD, packed) if len(packed) < len(payload) else (0, payload)


def bind(db: Any) -> DictionaryReader:
    """Make ``db``'s dictionaries the ones this thread reads payloads with (a connection's thread)."""
    d = _local.dicts = DictionaryReader(db)
    return d


def rebind(dicts: DictionaryReader | None) -> None:
    """Restore this thread's dictionaries after a temporary :func:`bind` (None: none)."""
    _local.dicts = dicts


def unbind() -> None:
    """Forget this thread's dictionaries (code that bound a connection of its own, then closed it)."""
    _local.__dict__.pop("dicts", None)


def bound() -> DictionaryReader:
    """The dictionaries bound to this thread; a payload that needs them cannot be read without."""
    d: DictionaryReader | None = getattr(_local, "dicts", None)
    if d is None:
        raise DecodeError("payload needs a compression dictionary, and no database is bound to this thread")
    return d


def bound_or_none() -> DictionaryReader | None:
    """The dictionaries bound to this thread, if any."""
    return getattr(_local, "dicts", None)


# --- sealed chunks' frames (the sealing policy is in chunks.py) ----------------------------------

#: Positions per chunk. A power of two dividing 2**32, so a chunk never spans two sessions' keys
#: and ``id & ~(CHUNK - 1)`` is the key of the chunk holding message ``id``. ``python -m
#: bench.bench_chunks`` (10,000 messages, pinned, five runs, 128 in two) loads one frame per
#: message in 52-60 ms best / 65-69 median, and chunks of 16, 32, 64 and 128 in 39-46 / 52-66,
#: 38-41 / 46-49, 30-34 / 35-50 and 34-37 / 59-65 ms (128 messages make outputs past the
#: allocator's small pool); payloads 3.33 MB, then 2.99, 2.92, 2.89 and 2.88 MB. Hence 64
#: (~90 KB a frame here). An earlier in-memory prototype had favoured 32; the bench did not.
CHUNK: Final = 64
_entries_decoder: Final = msgspec.msgpack.Decoder(list[tuple[int, int, msgspec.Raw]])
_encoder: Final = msgspec.msgpack.Encoder()
_raw_decoder: Final = msgspec.msgpack.Decoder(msgspec.Raw)
_content_decoder: Final = msgspec.msgpack.Decoder(list[tuple[int, int, list[ContentBlock]]])

#: What a damaged chunk (or a payload that cannot join one) raises.
CHUNK_ERRORS: Final = (*ROW_ERRORS, msgspec.DecodeError)

ChunkEntry = tuple[int, int, msgspec.Raw]  # (role code, FLAG_BLOBS or 0, MessagePack of the content)


def encode_chunk(entries: Sequence[tuple[int, int, bytes]]) -> tuple[int, bytes]:
    """``(flags, payload)`` of a chunk of ``(role, flags, content MessagePack)`` entries."""
    return pack(_encoder.encode([(r, f & FLAG_BLOBS, msgspec.Raw(p)) for r, f, p in entries]))


def decode_chunk_content(flags: int, payload: bytes) -> list[tuple[int, int, list[ContentBlock]]]:
    """A stored chunk's entries with their content decoded, in one call: the fast path of every
    load. Raises msgspec's ValidationError when an entry needs the codec's slower rules (a block
    type from a newer version), and what :func:`decode_chunk` raises when the chunk is damaged."""
    return _content_decoder.decode(inflate(flags, payload))


def decode_chunk(flags: int, payload: bytes) -> list[ChunkEntry]:
    """The entries of a stored chunk; raises a ROW_ERRORS error or msgspec's DecodeError when damaged."""
    return _entries_decoder.decode(inflate(flags, payload))
