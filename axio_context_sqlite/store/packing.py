"""How one message becomes one row, and back.

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

import hashlib
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

import msgspec
import zstandard

from axio_context.blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ToolResultBlock,
    VideoBlock,
)
from axio_context.codec import decode_content, encode_content
from axio_context.errors import CorruptDataError, DecodeError
from axio_context.messages import Message, text_columns

__all__ = [
    "BLOB_MIN",
    "COMPRESS_MIN",
    "DICT_SHIFT",
    "FLAG_BLOBS",
    "FLAG_SEALED",
    "FLAG_ZLIB",
    "FLAG_ZSTD",
    "ROLE_CODES",
    "ROLE_NAMES",
    "ROW_ERRORS",
    "Dictionaries",
    "EncodedMessage",
    "bind",
    "bound",
    "bound_or_none",
    "decode_row",
    "encode_message",
    "media_digests",
    "pack",
    "recompress",
    "restore_media",
    "unbind",
    "write_tx",
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
        """Up to ``wanted`` message payloads of at least COMPRESS_MIN bytes from sealed chunks."""
        from .chunks import CHUNK, CHUNK_ERRORS, decode_chunk

        out: list[bytes] = []
        for flags, payload in self._db.execute(
            f"SELECT flags, payload FROM chunks {chosen} LIMIT ?", (wanted // CHUNK + 1,)
        ).fetchall():
            try:
                entries = decode_chunk(flags, payload)
            except CHUNK_ERRORS:
                continue
            out.extend(bytes(raw) for _, _, raw in entries if len(raw) >= COMPRESS_MIN)
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


@contextmanager
def write_tx(c: Any) -> Iterator[None]:
    """One write transaction that takes the write lock up front.

    Inside a transaction the caller opened on the connection it is a savepoint instead: its
    writes join the caller's, which commits or rolls them back with its own.
    """
    if c.in_transaction:
        c.execute("SAVEPOINT axio_write")
        try:
            yield
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK TO axio_write")
                c.execute("RELEASE axio_write")
            raise
        c.execute("RELEASE axio_write")
        return
    c.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if c.in_transaction:
            c.execute("ROLLBACK")
        raise
    try:
        c.execute("COMMIT")
    except BaseException:
        if c.in_transaction:
            c.execute("ROLLBACK")
        raise


ROLE_CODES: Final = {"user": 0, "assistant": 1, "system": 2}
ROLE_NAMES: Final = ("user", "assistant", "system")

_Media = ImageBlock | AudioBlock | VideoBlock


class EncodedMessage(msgspec.Struct):
    """A message ready for the messages table, plus the blobs it references."""

    role: int
    flags: int
    payload: bytes
    blobs: list[tuple[bytes, bytes]]  # (digest, data) in reference order, repeats kept
    body: str = ""  # text the keyword index holds (see axio_context.messages.text_columns), when asked for
    tool: str = ""


def _media_blocks(content: Sequence[ContentBlock]) -> Iterable[_Media]:
    for block in content:
        if isinstance(block, ImageBlock | AudioBlock | VideoBlock):
            yield block
        elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
            for item in block.content:
                if isinstance(item, ImageBlock | AudioBlock | VideoBlock):
                    yield item


def _map_media(content: Sequence[ContentBlock], fn: Any) -> list[ContentBlock]:
    out: list[ContentBlock] = []
    for block in content:
        if isinstance(block, ImageBlock | AudioBlock | VideoBlock):
            out.append(fn(block))
        elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
            out.append(
                msgspec.structs.replace(
                    block,
                    content=[
                        fn(i) if isinstance(i, ImageBlock | AudioBlock | VideoBlock) else i
                        for i in block.content
                    ],
                )
            )
        else:
            out.append(block)
    return out


def encode_message(
    message: Message, *, text: bool = False, dicts: Dictionaries | None = None, index: int = 0
) -> EncodedMessage:
    """The row for ``message``: role code, flags, payload, and blobs to store.

    ``text=True`` also extracts the (body, tool) text for indexing or embedding now; appends
    leave it to the keyword index's batched fold, which re-reads it from the payload.
    ``dicts``: the database's dictionaries, to compress with its current one. Content the read
    path could not give back is refused (:class:`DecodeError` naming ``message {index}``, the
    block and the field) before anything is written.
    """
    try:
        role = ROLE_CODES[message.role]
    except (KeyError, TypeError):
        raise DecodeError(f"message {index}: invalid message role {message.role!r:.80}") from None
    try:
        payload = encode_content(message.content)  # validates the content as given
        content = message.content
        flags = 0
        blobs: list[tuple[bytes, bytes]] = []
        if any(len(b.data) >= BLOB_MIN for b in _media_blocks(content)):

            def external(block: _Media) -> _Media:
                digest = hashlib.sha256(block.data).digest()
                blobs.append((digest, block.data))
                return msgspec.structs.replace(block, data=digest)

            payload = encode_content(_map_media(content, external))
            flags |= FLAG_BLOBS
    except DecodeError as exc:
        raise DecodeError(f"message {index}: {exc}") from None
    except (TypeError, msgspec.EncodeError) as exc:
        raise DecodeError(f"message {index} cannot be encoded: {exc}") from None
    zflags, payload = pack(payload, dicts)
    flags |= zflags
    body, tool = text_columns(message) if text else ("", "")
    return EncodedMessage(role=role, flags=flags, payload=payload, blobs=blobs, body=body, tool=tool)


def blob_digests(flags: int, payload: bytes) -> list[bytes]:
    """The digests a stored row references (empty unless it has the blobs flag)."""
    if not flags & FLAG_BLOBS:
        return []
    return media_digests(decode_content(inflate(flags, payload)))


def media_digests(content: Sequence[ContentBlock]) -> list[bytes]:
    """The blob digests a decoded FLAG_BLOBS payload holds in place of its media bytes."""
    return [b.data for b in _media_blocks(content)]


def restore_media(
    content: list[ContentBlock], found: dict[bytes, bytes], where: str = ""
) -> list[ContentBlock]:
    """Put the media bytes back (``found``: digest -> data); a missing blob is corrupt data."""
    missing = [d.hex()[:12] for d in media_digests(content) if d not in found]
    if missing:
        raise CorruptDataError(f"{where}: media blob(s) {', '.join(missing)} missing")
    return _map_media(content, lambda b: msgspec.structs.replace(b, data=found[b.data]))


def decode_row(role: int, flags: int, payload: bytes, fetch_blobs: Any = None, *, where: str = "") -> Message:
    """The message stored in a row; ``fetch_blobs(digests) -> {digest: data}`` restores media."""
    try:
        content = decode_content(inflate(flags, payload))
        if flags & FLAG_BLOBS:
            content = restore_media(content, fetch_blobs(media_digests(content)), where)
        return Message(role=ROLE_NAMES[role], content=content)
    except CorruptDataError:
        raise
    except ROW_ERRORS as exc:
        raise CorruptDataError(f"{where}: stored message does not decode ({exc})") from None
