"""The one codec: JSON (for people and exports) and MessagePack (for storage).

Encoders and decoders are built once at import. Decoding takes msgspec's typed fast path; only
when that fails (an unknown block type from a newer version, or genuinely bad data) does it
fall back to decoding block by block, which keeps unknown blocks as :class:`UnknownBlock` and
turns real mistakes into a :class:`DecodeError` naming the exact field.

**Values plain msgspec cannot carry.** Python data may hold integers outside MessagePack's
``[-2**63, 2**64 - 1]`` (a factorial, a 128-bit id) and strings with lone surrogates (file names
from ``os.listdir``, tool output decoded with ``surrogateescape``). Nothing is refused or
altered: encoding takes msgspec's fast path and only when it raises rewrites what needs it.

- MessagePack: each block that holds such a value is stored as ``{"type": ESCAPED_TYPE, "block":
  <the block>}``, the integer as ext :data:`EXT_BIGINT` (two's complement, big-endian) and the
  string as ext :data:`EXT_STR` (UTF-8 with ``surrogatepass``), as values or as keys. The unknown
  ``type`` sends every typed decoder (this module's, a sealed chunk's) to the per-block path,
  which unwraps it (a bare ext in a tool input would pass a typed decoder silently, as an
  ``Ext`` object); a version that predates it keeps it as an :class:`UnknownBlock` and writes it
  back unchanged. Payloads without such values are byte for byte what they always were, and
  every payload stored before reads back as before.
- JSON: integers of any size are plain JSON numbers; lone surrogates are ``\\uXXXX`` escapes
  and NaN and infinities ``NaN``/``Infinity`` in the lossless exports (``exact=True``), read
  back by every JSON decoder here. How is in :mod:`axio_context._json`.

**What is stored reads back.** :func:`encode_content`, the storage payload every append writes,
refuses content the read path could not decode (see :mod:`.checks`): mapping keys in plain data
must be strings, as in JSON (a ``TypeError`` naming the key), plain data nests at most
:data:`MAX_DEPTH` levels, and the encoded payload must decode by the read path's own rules
(:class:`DecodeError` naming the block and field). :func:`check_message` applies the same rules
to a message without keeping the bytes (the memory store).

The package: :mod:`.escaping` (the MessagePack escapes), :mod:`.blockwise` (the per-block slow
path), :mod:`.checks` (what appends refuse); exact JSON lives in :mod:`axio_context._json`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, TypeVar, cast

import msgspec

from .._json import (
    ExactDecoder,
    contents_have_nonfinite,
    decode_json_exact,
    has_nonfinite,
    json_enc,
    json_exact,
    mark,
    unmark,
)
from ..blocks import ContentBlock
from ..errors import DecodeError
from ..messages import SURROGATE, Message
from .blockwise import JSON, MSGPACK, fast, slow
from .checks import MAX_DEPTH, check_role, checked_encode
from .escaping import ESCAPE_ON, ESCAPED_TYPE, EXT_BIGINT, EXT_STR, mp_blocks, mp_enc, mp_message

__all__ = [
    "ESCAPED_TYPE",
    "EXT_BIGINT",
    "EXT_STR",
    "MAX_DEPTH",
    "check_extras",
    "check_message",
    "contents_have_nonfinite",
    "decode_content",
    "decode_content_json",
    "decode_extras",
    "decode_json",
    "decode_json_exact",
    "decode_message_json",
    "decode_message_msgpack",
    "decode_messages_json",
    "decode_messages_msgpack",
    "encode_content",
    "encode_extras",
    "encode_json",
    "encode_message_json",
    "encode_message_msgpack",
    "encode_messages_json",
    "encode_messages_msgpack",
    "extras_metadata",
    "format_json",
]

T = TypeVar("T")

#: The MessagePack encoder (bench/bench_codec.py times it bare).
_mp_enc: Final = mp_enc

_json_msg: Final[ExactDecoder[Message]] = ExactDecoder(Message)
_json_msgs: Final[ExactDecoder[list[Message]]] = ExactDecoder(list[Message])
_json_content: Final[ExactDecoder[list[ContentBlock]]] = ExactDecoder(list[ContentBlock])
_mp_msg: Final = msgspec.msgpack.Decoder(Message)
_mp_msgs: Final = msgspec.msgpack.Decoder(list[Message])
_mp_content: Final = msgspec.msgpack.Decoder(list[ContentBlock])


# --- public API ---------------------------------------------------------------------------------


def encode_json(obj: Any, *, exact: bool = False) -> bytes:
    """Encode any supported value (messages, blocks, plain data) as compact JSON.

    JSON has no NaN or infinity; msgspec writes them as ``null``, losing them. ``exact=True``
    (the lossless exports) writes them as ``NaN``/``Infinity``/``-Infinity`` instead, the
    spelling of Python's ``json`` module and of JSON5 (JavaScript's literals), which this module
    reads back; strict JSON parsers refuse those records, which beats a silent change. It costs
    a walk of ``obj``, so plain calls (the hot ones) skip it. Lone surrogates are always written
    as ``\\uXXXX`` escapes.
    """
    if exact and has_nonfinite(obj):
        return json_exact(obj)
    try:
        return json_enc.encode(obj)
    except UnicodeEncodeError:
        return json_exact(obj)


def format_json(obj: Any, indent: int = 2) -> bytes:
    """``obj`` as indented JSON for people; lone surrogates stay ``\\uXXXX`` escapes and
    non-finite numbers ``NaN``/``Infinity`` (msgspec's formatter alone refuses both)."""
    data = encode_json(obj, exact=True)
    try:
        return msgspec.json.format(data, indent=indent)
    except msgspec.DecodeError:
        marked = mark(data)
        if marked is None:
            raise
        return unmark(msgspec.json.format(marked[0], indent=indent), marked[1])


def decode_json(data: bytes | str, tp: type[T]) -> T:
    """Decode JSON into ``tp`` with msgspec validation, raising :class:`DecodeError`."""
    try:
        return cast(T, decode_json_exact(_json_decoder(cast(Any, tp)), _as_bytes(data)))
    except msgspec.DecodeError as exc:  # ValidationError included
        raise DecodeError(str(exc)) from None


@functools.lru_cache(maxsize=64)
def _json_decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(tp)


def encode_message_json(message: Message) -> bytes:
    """One message as JSON (images as base64)."""
    return encode_json(message)


def encode_messages_json(messages: Sequence[Message]) -> bytes:
    """A list of messages as one JSON array."""
    return encode_json(messages)


def encode_message_msgpack(message: Message) -> bytes:
    """One message as MessagePack (bytes stay binary)."""
    try:
        return mp_enc.encode(message)
    except ESCAPE_ON:
        return mp_enc.encode(mp_message(message))


def encode_messages_msgpack(messages: Sequence[Message]) -> bytes:
    """A list of messages as one MessagePack array."""
    try:
        return mp_enc.encode(messages)
    except ESCAPE_ON:
        return mp_enc.encode([mp_message(m) for m in messages])


#: Tuples, not ``X | Y`` unions: on Python 3.11 isinstance with a union is measurably slower.
def _encode_content(content: Sequence[ContentBlock]) -> bytes:
    try:
        return mp_enc.encode(content)
    except ESCAPE_ON:
        return mp_enc.encode(mp_blocks(content))


def encode_content(content: Sequence[ContentBlock]) -> bytes:
    """A message's content blocks alone as MessagePack: the storage payload.

    Refused unless the read path gives the content back (see :mod:`.checks`):
    :class:`DecodeError` naming the block and field, ``TypeError`` for a mapping key that is not
    a string or a value the encoder does not support.
    """
    return checked_encode(content, _encode_content)


class _Extras(msgspec.Struct, omit_defaults=True):
    """A message's optional fields, as a store that keeps content apart from them writes them."""

    id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None


_mp_extras: Final = msgspec.msgpack.Decoder(_Extras)


def encode_extras(message: Message) -> bytes | None:
    """A message's ``id``/``timestamp``/``metadata`` as MessagePack, or None when none is set
    (the SQLite store keeps them beside the content payload, whose bytes they never change).
    Refused like :func:`check_extras`."""
    if message.id is None and message.timestamp is None and message.metadata is None:
        return None
    return check_extras(message)


def check_extras(message: Message) -> bytes:
    """The encoded extras of ``message``, refused (:class:`DecodeError` naming the field) unless
    they read back: a string id, a datetime, metadata with string keys and encodable values."""
    if message.id is not None and not isinstance(message.id, str):
        raise DecodeError(f"id: expected a string, got {type(message.id).__name__}")
    if message.timestamp is not None and not isinstance(message.timestamp, datetime):
        raise DecodeError(f"timestamp: expected a datetime, got {type(message.timestamp).__name__}")
    if message.metadata is not None and not isinstance(message.metadata, dict):
        raise DecodeError(f"metadata: expected a mapping, got {type(message.metadata).__name__}")
    try:
        data = mp_enc.encode(_Extras(message.id, message.timestamp, message.metadata))
        _mp_extras.decode(data)
    except RecursionError:
        raise DecodeError(f"metadata nests more than {MAX_DEPTH} levels deep") from None
    except (
        TypeError,
        ValueError,
        OverflowError,
        NotImplementedError,
        msgspec.EncodeError,
        msgspec.DecodeError,
    ) as exc:
        raise DecodeError(f"metadata cannot be stored: {exc}") from None
    return data


def decode_extras(data: bytes) -> dict[str, Any]:
    """Inverse of :func:`encode_extras`: the keyword arguments to give :class:`Message`."""
    try:
        extras = _mp_extras.decode(data)
    except msgspec.DecodeError as exc:
        raise DecodeError(f"message extras do not decode: {exc}") from None
    return {"id": extras.id, "timestamp": extras.timestamp, "metadata": extras.metadata}


class _MetadataOnly(msgspec.Struct):
    """The ``metadata`` of encoded extras; their id and timestamp are skipped, never built."""

    metadata: dict[str, Any] | None = None


_mp_metadata: Final = msgspec.msgpack.Decoder(_MetadataOnly)


def extras_metadata(data: bytes) -> dict[str, Any] | None:
    """The metadata of :func:`encode_extras`' bytes, without decoding the rest: what a reader
    that wants one metadata value of many messages (a bridge's stored items) decodes."""
    try:
        return _mp_metadata.decode(data).metadata
    except msgspec.DecodeError as exc:
        raise DecodeError(f"message extras do not decode: {exc}") from None


def check_message(message: Message) -> None:
    """Refuse (:class:`DecodeError` naming the field) a message a store could not give back: the
    rules :func:`encode_content` applies, for a store that keeps objects (the memory store)."""
    if not isinstance(message, Message):
        raise DecodeError(f"expected a Message, got {type(message).__name__}")
    check_role(message.role)
    encode_extras(message)
    try:
        checked_encode(message.content, _encode_content)
    except (TypeError, msgspec.EncodeError) as exc:
        raise DecodeError(f"cannot be encoded: {exc}") from None


def decode_message_json(data: bytes | str) -> Message:
    """Inverse of :func:`encode_message_json`."""
    raw = _as_bytes(data)
    return fast(
        _json_msg.decode,
        raw,
        JSON,
        lambda: slow(lambda: JSON.message(JSON.raw_message.decode(raw), "$")),
    )


def decode_messages_json(data: bytes | str) -> list[Message]:
    """Inverse of :func:`encode_messages_json`."""
    raw = _as_bytes(data)
    return fast(
        _json_msgs.decode,
        raw,
        JSON,
        lambda: slow(
            lambda: [JSON.message(m, f"$[{i}]") for i, m in enumerate(JSON.raw_messages.decode(raw))],
        ),
    )


def decode_message_msgpack(data: bytes) -> Message:
    """Inverse of :func:`encode_message_msgpack`."""
    return fast(
        _mp_msg.decode,
        data,
        MSGPACK,
        lambda: slow(lambda: MSGPACK.message(MSGPACK.raw_message.decode(data), "$")),
    )


def decode_messages_msgpack(data: bytes) -> list[Message]:
    """Inverse of :func:`encode_messages_msgpack`."""
    return fast(
        _mp_msgs.decode,
        data,
        MSGPACK,
        lambda: slow(
            lambda: [MSGPACK.message(m, f"$[{i}]") for i, m in enumerate(MSGPACK.raw_messages.decode(data))],
        ),
    )


def decode_content(data: bytes) -> list[ContentBlock]:
    """Inverse of :func:`encode_content` (the hot path of every load: no per-call closures)."""
    try:
        return _mp_content.decode(data)
    except msgspec.ValidationError:
        return slow(
            lambda: [MSGPACK.block(b, f"$[{i}]") for i, b in enumerate(MSGPACK.raw_blocks.decode(data))]
        )
    except msgspec.DecodeError as exc:
        raise DecodeError(f"malformed MessagePack: {exc}") from None


def decode_content_json(data: bytes | str) -> list[ContentBlock]:
    """Content blocks from a JSON array (the same rules as :func:`decode_content`)."""
    raw = _as_bytes(data)
    return fast(
        _json_content.decode,
        raw,
        JSON,
        lambda: slow(
            lambda: [JSON.block(b, f"$[{i}]") for i, b in enumerate(JSON.raw_blocks.decode(raw))],
        ),
    )


def _as_bytes(data: bytes | str) -> bytes:
    """JSON text as bytes; a lone surrogate in a ``str`` (only valid inside a JSON string) becomes
    its ``\\uXXXX`` escape, as an encoder would have written it."""
    if not isinstance(data, str):
        return data
    try:
        return data.encode()
    except UnicodeEncodeError:
        return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", data).encode()
