"""How one message becomes one row, and back.

The payload is the MessagePack of the content blocks (the shared codec). Payloads of
``COMPRESS_MIN`` bytes or more are zlib-compressed when that makes them smaller; below it the
CPU cost buys too little (measured on agent transcripts: ~100 bytes saved per 256-byte payload
for ~25 us, ~300 bytes per 512-byte payload, 2-4 KB per 4 KB tool result). When a message holds
media of ``BLOB_MIN`` bytes or more, every media block's bytes are replaced by their SHA-256
digest and stored once in the ``blobs`` table, shared by every message and fork that uses them.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Sequence
from typing import Any, Final

import msgspec

from axio_context.blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ToolResultBlock,
    VideoBlock,
)
from axio_context.codec import decode_content, encode_content
from axio_context.errors import CorruptDataError, DecodeError
from axio_context.messages import Message

from .fts import fts_columns

__all__ = [
    "BLOB_MIN",
    "COMPRESS_MIN",
    "FLAG_BLOBS",
    "FLAG_ZLIB",
    "ROLE_CODES",
    "ROLE_NAMES",
    "EncodedMessage",
    "decode_row",
    "encode_message",
]

COMPRESS_MIN: Final = 512
ZLIB_LEVEL: Final = 1  # level 6 saves ~5% more on transcripts at twice the CPU
BLOB_MIN: Final = 1024

FLAG_ZLIB: Final = 1
FLAG_BLOBS: Final = 2

ROLE_CODES: Final = {"user": 0, "assistant": 1, "system": 2}
ROLE_NAMES: Final = ("user", "assistant", "system")

_Media = ImageBlock | AudioBlock | VideoBlock


class EncodedMessage(msgspec.Struct):
    """A message ready for the messages table, plus the blobs it references."""

    role: int
    flags: int
    payload: bytes
    blobs: list[tuple[bytes, bytes]]  # (digest, data) in reference order, repeats kept
    body: str = ""  # text the keyword index holds (see fts.fts_columns)
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


def encode_message(message: Message) -> EncodedMessage:
    """The row for ``message``: role code, flags, payload, and blobs to store."""
    try:
        role = ROLE_CODES[message.role]
    except KeyError:
        raise DecodeError(f"invalid message role {message.role!r}") from None
    content = message.content
    flags = 0
    blobs: list[tuple[bytes, bytes]] = []
    if any(len(b.data) >= BLOB_MIN for b in _media_blocks(content)):

        def external(block: _Media) -> _Media:
            digest = hashlib.sha256(block.data).digest()
            blobs.append((digest, block.data))
            return msgspec.structs.replace(block, data=digest)

        content = _map_media(content, external)
        flags |= FLAG_BLOBS
    try:
        payload = encode_content(content)
    except (TypeError, msgspec.EncodeError) as exc:
        raise DecodeError(f"message cannot be encoded: {exc}") from None
    if len(payload) >= COMPRESS_MIN:
        packed = zlib.compress(payload, ZLIB_LEVEL)
        if len(packed) < len(payload):
            payload = packed
            flags |= FLAG_ZLIB
    body, tool = fts_columns(message)
    return EncodedMessage(role=role, flags=flags, payload=payload, blobs=blobs, body=body, tool=tool)


def blob_digests(flags: int, payload: bytes) -> list[bytes]:
    """The digests a stored row references (empty unless it has the blobs flag)."""
    if not flags & FLAG_BLOBS:
        return []
    data = zlib.decompress(payload) if flags & FLAG_ZLIB else payload
    return [b.data for b in _media_blocks(decode_content(data))]


def decode_row(role: int, flags: int, payload: bytes, fetch_blobs: Any = None, *, where: str = "") -> Message:
    """The message stored in a row; ``fetch_blobs(digests) -> {digest: data}`` restores media."""
    try:
        data = zlib.decompress(payload) if flags & FLAG_ZLIB else payload
        content = decode_content(data)
        if flags & FLAG_BLOBS:
            digests = [b.data for b in _media_blocks(content)]
            found: dict[bytes, bytes] = fetch_blobs(digests)
            missing = [d.hex()[:12] for d in digests if d not in found]
            if missing:
                raise CorruptDataError(f"{where}: media blob(s) {', '.join(missing)} missing")
            content = _map_media(content, lambda b: msgspec.structs.replace(b, data=found[b.data]))
        return Message(role=ROLE_NAMES[role], content=content)
    except CorruptDataError:
        raise
    except (zlib.error, DecodeError, IndexError, TypeError) as exc:
        raise CorruptDataError(f"{where}: stored message does not decode ({exc})") from None
