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

Zstandard dictionaries. One message is a few KB, too little for a compressor to learn a
transcript's vocabulary from, while the database as a whole repeats it endlessly. Once a database
holds ``TRAIN_AT`` compressed payloads, the next append trains a dictionary from up to
``TRAIN_SAMPLES`` of them (zstd's fast COVER trainer: 2.4-3.2 ms) and stores it in ``zstd_dicts``; later
payloads are compressed with it and record its id in their flags (``flags >> DICT_SHIFT``). On the
bench transcripts that took payloads of 512 bytes or more from 0.29 to 0.22 of the MessagePack
and their decompression (most of a long session's load) from ~9 to ~6 us
(``bench/bench_compression.py``). A connection keeps its database's
dictionaries in a :class:`Dictionaries`, bound to the connection's worker thread (see
:func:`bind`): every function that reads payloads runs there.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from typing import Any, Final

import msgspec
import zstandard

from axio_context.blocks import ContentBlock
from axio_context.errors import DecodeError

from .transactions import write_tx

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
    "Dictionaries",
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
    "writing",
]

COMPRESS_MIN: Final = 512
#: With a dictionary, small payloads compress too: 0.35-0.40 of 64-511 bytes for 2-5 us.
DICT_COMPRESS_MIN: Final = 64
ZSTD_LEVEL: Final = 3  # zstd's default: level 1 is no faster on payloads this small
BLOB_MIN: Final = 1024

FLAG_ZLIB: Final = 1  # written by earlier development builds; read, never written
FLAG_BLOBS: Final = 2
FLAG_ZSTD: Final = 4
#: The payload is in the message's chunk (see :mod:`.chunks`); the row's payload is empty.
FLAG_SEALED: Final = 8
#: ``flags >> DICT_SHIFT`` is the ``zstd_dicts`` row a FLAG_ZSTD payload needs (0: none).
DICT_SHIFT: Final = 8

#: Compressed payloads a database holds before its dictionary is trained.
TRAIN_AT: Final = 64
#: The most payloads a dictionary is trained on (the newest ones).
TRAIN_SAMPLES: Final = 256
#: Dictionary size: 16, 32 and 64 KB give ratios within 1% of each other (bench_compression).
DICT_SIZE: Final = 16 * 1024

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

    A payload compressed with a dictionary is read through the dictionaries bound to this
    thread (:func:`bind`).
    """
    if flags & FLAG_ZSTD:
        if flags >> DICT_SHIFT:
            return bound().decompress(flags >> DICT_SHIFT, payload)
        return unzstd(payload)
    if flags & FLAG_ZLIB:
        return zlib.decompress(payload)
    return payload


class Dictionaries:
    """The Zstandard dictionaries of one database, as one connection knows them.

    ``current`` (the newest) compresses new payloads; older ones are loaded when a payload needs
    them. Compression may run on any thread (the event loop's, for appends); loading, training and
    decompressing run on the connection's own thread, with its connection.
    """

    def __init__(self, db: Any) -> None:
        self._db = db
        self._dicts: dict[int, zstandard.ZstdCompressionDict] = {}
        self._local = threading.local()
        #: ``(id, dictionary)`` new payloads are compressed with; None until one is trained.
        self.current: tuple[int, zstandard.ZstdCompressionDict] | None = None
        # Compressed payloads stored without a dictionary (None: not counted yet this connection).
        self._untrained: int | None = None

    def load(self) -> None:
        """Adopt the database's newest dictionary as current (none when it has none, or is too old
        to have the table)."""
        try:
            row = self._db.execute("SELECT id, data FROM zstd_dicts ORDER BY id DESC LIMIT 1").fetchone()
        except Exception as exc:  # a read-only connection to a pre-version-4 file
            if "no such table" in str(exc):
                return
            raise
        self.current = None if row is None else (int(row[0]), self._adopt(int(row[0]), bytes(row[1])))

    def _adopt(self, dict_id: int, data: bytes) -> zstandard.ZstdCompressionDict:
        d = zstandard.ZstdCompressionDict(data, dict_type=zstandard.DICT_TYPE_FULLDICT)
        d.precompute_compress(level=ZSTD_LEVEL)  # read-only from here on: safe to share
        self._dicts[dict_id] = d
        return d

    def _dictionary(self, dict_id: int) -> zstandard.ZstdCompressionDict:
        d = self._dicts.get(dict_id)
        if d is None:
            row = self._db.execute("SELECT data FROM zstd_dicts WHERE id = ?", (dict_id,)).fetchone()
            if row is None:
                raise DecodeError(f"compression dictionary {dict_id} is missing")
            try:
                d = self._adopt(dict_id, bytes(row[0]))
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

    def decompress(self, dict_id: int, payload: bytes) -> bytes:
        """The bytes of a payload compressed with dictionary ``dict_id``."""
        return self.decompressor(dict_id).decompress(payload)

    def inflate(self, flags: int, payload: bytes) -> bytes:
        """A stored payload's MessagePack bytes, a dictionary's read through this object (not
        the thread's bound one, as the module's :func:`inflate` does)."""
        dict_id = flags >> DICT_SHIFT
        return self.decompress(dict_id, payload) if dict_id else inflate(flags, payload)

    def compress(self, payload: bytes) -> tuple[int, bytes]:
        """``(flags, bytes)`` of ``payload`` compressed with the current dictionary, if any."""
        current = self.current
        if current is None:
            return FLAG_ZSTD, _compressor().compress(payload)
        dict_id, d = current
        cache: dict[int, zstandard.ZstdCompressor] | None = getattr(self._local, "c", None)
        if cache is None:
            cache = self._local.c = {}
        c = cache.get(dict_id)
        if c is None:
            c = cache[dict_id] = zstandard.ZstdCompressor(
                level=ZSTD_LEVEL, dict_data=d, write_checksum=False, write_dict_id=False
            )
        return FLAG_ZSTD | dict_id << DICT_SHIFT, c.compress(payload)

    def keep_current(self, c: Any) -> None:
        """Inside a write transaction on ``c``, before compressing: adopt the newest dictionary if
        the current one is no longer in the database.

        ``vacuum --recompress`` on another connection deletes the dictionaries no row uses,
        perhaps this one's current: a payload compressed with it would decode nowhere else. The
        transaction holds the write lock, so the answer holds until the rows are in.
        """
        current = self.current
        if current is None:
            return
        if c.execute("SELECT 1 FROM zstd_dicts WHERE id = ?", (current[0],)).fetchone() is None:
            self.load()  # the deleted one stays in memory, to read what used it

    def count(self, flags: Iterable[int]) -> bool:
        """Count stored rows' compressed payloads toward the first dictionary's training.

        Returns whether :meth:`train_if_due` has work: training is due, or this connection has
        not counted the database's payloads yet.
        """
        if self.current is not None:
            return False
        if self._untrained is None:
            return True
        self._untrained += sum(1 for f in flags if f & FLAG_ZSTD)
        return self._untrained >= TRAIN_AT

    def train_if_due(self) -> None:
        """Train the first dictionary once the database holds ``TRAIN_AT`` compressed payloads.

        Call it outside a transaction, after the rows were committed.
        """
        if self.current is not None:
            return
        if self._untrained is None:  # first time on this connection: count what is stored
            self._untrained = int(
                self._db.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM messages WHERE flags & ? LIMIT ?)",
                    (FLAG_ZSTD, TRAIN_AT),
                ).fetchone()[0]
            )
        if self._untrained >= TRAIN_AT:
            try:
                self.train()
            except BaseException:
                self._untrained = 0  # back off: the next try comes TRAIN_AT payloads later
                raise

    def train(self, *, replace: bool = False, spread: bool = False) -> int | None:
        """Train a dictionary on compressed payloads and make it current.

        The samples are the newest payloads, or with ``spread`` a random draw from the whole
        database. Another connection's dictionary is adopted instead when there is one, unless
        ``replace``. Returns the new dictionary's id, or None when there is too little to learn from.
        """
        with write_tx(self._db):
            if not replace:
                self.load()
                if self.current is not None:
                    return None
            chosen = "ORDER BY random()" if spread else "ORDER BY id DESC"
            rows = self._db.execute(
                "SELECT flags, payload FROM messages WHERE id IN"
                f" (SELECT id FROM messages WHERE flags & ? {chosen} LIMIT ?)",
                (FLAG_ZSTD, TRAIN_SAMPLES),
            ).fetchall()
            samples: list[Any] = []
            for flags, payload in rows:
                try:
                    samples.append(self.inflate(flags, payload))
                except ROW_ERRORS:
                    continue  # a damaged row is reported when it is read, not here
            if len(samples) < TRAIN_SAMPLES:  # most of the database may be sealed into chunks
                samples.extend(self._chunk_samples(chosen, TRAIN_SAMPLES - len(samples)))
            self._untrained = len(samples)
            if len(samples) < TRAIN_AT:
                return None
            dict_id = int(self._db.execute("SELECT coalesce(max(id), 0) + 1 FROM zstd_dicts").fetchone()[0])
            try:
                # fastcover with fixed parameters: 2.4-3.2 ms for 64 samples, against ~44 ms for the
                # default parameter search, for a ratio within 1% of it.
                trained = zstandard.train_dictionary(
                    DICT_SIZE, samples, dict_id=dict_id, k=256, d=8, f=16, accel=5, steps=1
                )
            except zstandard.ZstdError:
                self._untrained = 0  # nothing learnable (tiny or random payloads): retry later
                return None
            data = trained.as_bytes()
            self._db.execute(
                "INSERT INTO zstd_dicts (id, data, samples, created_at) VALUES (?, ?, ?, ?)",
                (dict_id, data, len(samples), time.time_ns() // 1_000_000),
            )
        self.current = (dict_id, self._adopt(dict_id, data))
        return dict_id

    def _chunk_samples(self, chosen: str, wanted: int) -> list[bytes]:
        """Up to ``wanted`` message payloads of at least COMPRESS_MIN bytes from sealed chunks
        (read chunk by chunk until there are enough, whatever a chunk's size)."""
        out: list[bytes] = []
        for flags, payload in self._db.execute(f"SELECT flags, payload FROM chunks {chosen}"):
            try:
                entries = decode_chunk(flags, payload)
            except CHUNK_ERRORS:
                continue
            out.extend(bytes(raw) for _, _, raw in entries if len(raw) >= COMPRESS_MIN)
            if len(out) >= wanted:
                break
        return out[:wanted]


def recompress(dicts: Dictionaries, flags: int, payload: bytes) -> tuple[int, bytes]:
    """A stored row's ``(flags, payload)`` compressed as a new one would be (:func:`pack`); the
    blobs flag is kept."""
    zflags, packed = pack(dicts.inflate(flags, payload), dicts)
    return flags & FLAG_BLOBS | zflags, packed


def pack(payload: bytes, dicts: Dictionaries | None) -> tuple[int, bytes]:
    """``(compression flags, bytes)`` to store a MessagePack payload as: compressed with the
    database's current dictionary, or without one (and only from ``COMPRESS_MIN`` bytes) before
    it has one; as it is when that is not smaller."""
    if len(payload) < (COMPRESS_MIN if dicts is None or dicts.current is None else DICT_COMPRESS_MIN):
        return 0, payload
    if dicts is None:
        zflags, packed = FLAG_ZSTD, _compressor().compress(payload)
    else:
        zflags, packed = dicts.compress(payload)
    return (zflags, packed) if len(packed) < len(payload) else (0, payload)


def bind(db: Any) -> Dictionaries:
    """Make ``db``'s dictionaries the ones this thread reads payloads with (a connection's thread)."""
    d: Dictionaries = Dictionaries(db)
    d.load()
    _local.dicts = d
    return d


def rebind(dicts: Dictionaries | None) -> None:
    """Restore this thread's dictionaries after a temporary :func:`bind` (None: none)."""
    _local.dicts = dicts


def unbind() -> None:
    """Forget this thread's dictionaries (code that bound a connection of its own, then closed it)."""
    _local.__dict__.pop("dicts", None)


def bound() -> Dictionaries:
    """The dictionaries bound to this thread; a payload that needs them cannot be read without."""
    d: Dictionaries | None = getattr(_local, "dicts", None)
    if d is None:
        raise DecodeError("payload needs a compression dictionary, and no database is bound to this thread")
    return d


def writing(c: Any) -> Dictionaries | None:
    """The thread's dictionaries for compressing inside ``c``'s write transaction, their current
    one checked to be still in the database (:meth:`Dictionaries.keep_current`)."""
    dicts = bound_or_none()
    if dicts is not None:
        dicts.keep_current(c)
    return dicts


def bound_or_none() -> Dictionaries | None:
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


def encode_chunk(entries: Sequence[tuple[int, int, bytes]], dicts: Dictionaries | None) -> tuple[int, bytes]:
    """``(flags, payload)`` of a chunk of ``(role, flags, content MessagePack)`` entries."""
    return pack(_encoder.encode([(r, f & FLAG_BLOBS, msgspec.Raw(p)) for r, f, p in entries]), dicts)


def decode_chunk_content(flags: int, payload: bytes) -> list[tuple[int, int, list[ContentBlock]]]:
    """A stored chunk's entries with their content decoded, in one call: the fast path of every
    load. Raises msgspec's ValidationError when an entry needs the codec's slower rules (a block
    type from a newer version), and what :func:`decode_chunk` raises when the chunk is damaged."""
    return _content_decoder.decode(inflate(flags, payload))


def decode_chunk(flags: int, payload: bytes) -> list[ChunkEntry]:
    """The entries of a stored chunk; raises a ROW_ERRORS error or msgspec's DecodeError when damaged."""
    return _entries_decoder.decode(inflate(flags, payload))
