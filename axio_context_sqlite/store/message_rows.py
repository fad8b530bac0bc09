"""How one message becomes one row of the messages table, and back: role codes, the payload
(compressed by :mod:`.packing`), and media stored once as blobs by their SHA-256 digest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Final

import msgspec

from axio_context.blocks import AudioBlock, ContentBlock, ImageBlock, ToolResultBlock, VideoBlock
from axio_context.codec import decode_content, decode_extras, encode_content, encode_extras
from axio_context.errors import CorruptDataError, DecodeError
from axio_context.messages import Message, text_columns

from .packing import BLOB_MIN, FLAG_BLOBS, ROW_ERRORS, inflate, pack

__all__ = [
    "ROLE_CODES",
    "ROLE_NAMES",
    "EncodedMessage",
    "blob_digests",
    "decode_row",
    "encode_message",
    "media_digests",
    "restore_media",
    "with_extras",
]


ROLE_CODES: Final = {"user": 0, "assistant": 1, "system": 2}
ROLE_NAMES: Final = ("user", "assistant", "system")

_Media = ImageBlock | AudioBlock | VideoBlock
#: The media block types as a tuple: ``isinstance`` with it is several times faster than with
#: the union, which Python 3.11 also builds again at every evaluation of ``A | B | C``.
_MEDIA: Final = (ImageBlock, AudioBlock, VideoBlock)


class EncodedMessage(msgspec.Struct, gc=False):
    """A message ready for the messages table, plus the blobs it references.

    Never tracked by the garbage collector (``gc=False``: it holds bytes, text and tuples, so it
    can be in no cycle), nor is its ``blobs`` when empty (the shared empty tuple): a batch of 1,000
    makes 2,000 fewer tracked objects, which would survive into older generations while the
    batch is written and bring the next full collection of the application's heap sooner."""

    role: int
    flags: int
    payload: bytes
    blobs: tuple[tuple[bytes, bytes], ...]  # (digest, data) in reference order, repeats kept
    body: str = ""  # text the keyword index holds (see axio_context.messages.text_columns), when asked for
    tool: str = ""
    extra: bytes | None = None  # the message's id/timestamp/metadata (message_extras), when set


def _media_blocks(content: Sequence[ContentBlock]) -> Iterable[_Media]:
    for block in content:
        if isinstance(block, _MEDIA):
            yield block
        elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
            for item in block.content:
                if isinstance(item, _MEDIA):
                    yield item


def _has_big_media(content: Sequence[ContentBlock]) -> bool:
    """Whether a media block holds :data:`BLOB_MIN` bytes or more (stored once, as a blob)."""
    for block in content:
        if isinstance(block, _MEDIA):
            if len(block.data) >= BLOB_MIN:
                return True
        elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
            for item in block.content:
                if isinstance(item, _MEDIA) and len(item.data) >= BLOB_MIN:
                    return True
    return False


def _map_media(content: Sequence[ContentBlock], fn: Any) -> list[ContentBlock]:
    out: list[ContentBlock] = []
    for block in content:
        if isinstance(block, _MEDIA):
            out.append(fn(block))
        elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
            out.append(
                msgspec.structs.replace(
                    block,
                    content=[fn(i) if isinstance(i, _MEDIA) else i for i in block.content],
                )
            )
        else:
            out.append(block)
    return out


def encode_message(message: Message, *, text: bool = False, index: int = 0) -> EncodedMessage:
    """The row for ``message``: role code, flags, payload, and blobs to store.

    ``text=True`` also extracts the (body, tool) text for indexing or embedding now; appends
    leave it to the keyword index's batched fold, which re-reads it from the payload. Content
    the read path could not give back is refused (:class:`DecodeError` naming ``message
    {index}``, the block and the field) before anything is written.
    """
    try:
        role = ROLE_CODES[message.role]
    except (KeyError, TypeError):
        raise DecodeError(f"message {index}: invalid message role {message.role!r:.80}") from None
    try:
        payload = encode_content(message.content)  # validates the content as given
        extra = encode_extras(message)
        content = message.content
        flags = 0
        blobs: list[tuple[bytes, bytes]] = []
        if _has_big_media(content):

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
    zflags, payload = pack(payload)
    flags |= zflags
    body, tool = text_columns(message) if text else ("", "")
    return EncodedMessage(
        role=role, flags=flags, payload=payload, blobs=tuple(blobs), body=body, tool=tool, extra=extra
    )


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


def with_extras(message: Message, data: bytes) -> Message:
    """``message`` with the id/timestamp/metadata stored for it in ``message_extras``."""
    return msgspec.structs.replace(message, **decode_extras(data))
