"""The one codec: JSON (for people and exports) and MessagePack (for storage).

Encoders and decoders are built once at import. Decoding takes msgspec's typed fast path; only
when that fails (an unknown block type from a newer version, or genuinely bad data) does it
fall back to decoding block by block, which keeps unknown blocks as :class:`UnknownBlock` and
turns real mistakes into a :class:`DecodeError` naming the exact field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import msgspec

from .blocks import KNOWN_BLOCK_TYPES, ContentBlock, UnknownBlock
from .errors import DecodeError
from .messages import Message, Role

__all__ = [
    "decode_content",
    "decode_json",
    "decode_message_json",
    "decode_message_msgpack",
    "decode_messages_json",
    "decode_messages_msgpack",
    "encode_content",
    "encode_json",
    "encode_message_json",
    "encode_message_msgpack",
    "encode_messages_json",
    "encode_messages_msgpack",
]

T = TypeVar("T")


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, UnknownBlock):
        return obj.data
    raise NotImplementedError(f"cannot encode objects of type {type(obj).__name__}")


_json_enc: Final = msgspec.json.Encoder(enc_hook=_enc_hook)
_mp_enc: Final = msgspec.msgpack.Encoder(enc_hook=_enc_hook)

_json_msg: Final = msgspec.json.Decoder(Message)
_json_msgs: Final = msgspec.json.Decoder(list[Message])
_json_content: Final = msgspec.json.Decoder(list[ContentBlock])
_mp_msg: Final = msgspec.msgpack.Decoder(Message)
_mp_msgs: Final = msgspec.msgpack.Decoder(list[Message])
_mp_content: Final = msgspec.msgpack.Decoder(list[ContentBlock])


# --- the slow path: one block at a time --------------------------------------------------------


class _RawMessage(msgspec.Struct):
    role: Role
    content: list[msgspec.Raw] = msgspec.field(default_factory=list)


class _TypeOnly(msgspec.Struct):
    type: str


class _NestedTypes(msgspec.Struct):
    content: str | list[_TypeOnly]


_NESTED_KNOWN: Final = frozenset({"text", "image", "audio", "video"})


class _Format:
    """The per-format decoders the slow path needs, built once."""

    def __init__(self, decode: Callable[..., Any], name: str) -> None:
        self.name = name
        self._decoder = decode
        self.raw_message = self._decoder(_RawMessage)
        self.raw_messages = self._decoder(list[_RawMessage])
        self.raw_blocks = self._decoder(list[msgspec.Raw])
        self.type_only = self._decoder(_TypeOnly)
        self.nested = self._decoder(_NestedTypes)
        self.any = self._decoder(Any)
        self.blocks = {kind: self._decoder(cls) for kind, cls in KNOWN_BLOCK_TYPES.items()}

    def block(self, raw: msgspec.Raw, where: str) -> ContentBlock:
        try:
            kind = self.type_only.decode(raw).type
        except msgspec.DecodeError as exc:
            raise DecodeError(_where(exc, where)) from None
        dec = self.blocks.get(kind)
        if dec is None:
            return UnknownBlock(self.any.decode(raw))
        try:
            block: ContentBlock = dec.decode(raw)
        except msgspec.ValidationError as exc:
            if kind == "tool_result" and self._nested_unknown(raw):
                return UnknownBlock(self.any.decode(raw))
            raise DecodeError(_where(exc, where)) from None
        return block

    def _nested_unknown(self, raw: msgspec.Raw) -> bool:
        try:
            nested = self.nested.decode(raw).content
        except msgspec.DecodeError:
            return False
        return not isinstance(nested, str) and any(t.type not in _NESTED_KNOWN for t in nested)

    def message(self, raw: _RawMessage, where: str) -> Message:
        content = [self.block(b, f"{where}.content[{i}]") for i, b in enumerate(raw.content)]
        return Message(role=raw.role, content=content)


def _where(exc: Exception, where: str) -> str:
    """Rewrite msgspec's ``$``-rooted path so it points into the whole document."""
    text = str(exc)
    if "`$" in text:
        return text.replace("`$", f"`{where}", 1)
    return f"{text} - at `{where}`"


_JSON: Final = _Format(lambda tp: msgspec.json.Decoder(tp), "JSON")
_MSGPACK: Final = _Format(lambda tp: msgspec.msgpack.Decoder(tp), "MessagePack")


def _fast(decode: Callable[[bytes], T], data: bytes, fmt: _Format, slow: Callable[[], T]) -> T:
    try:
        return decode(data)
    except msgspec.ValidationError:
        return slow()
    except msgspec.DecodeError as exc:
        raise DecodeError(f"malformed {fmt.name}: {exc}") from None


def _slow(step: Callable[[], T]) -> T:
    try:
        return step()
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from None


# --- public API ---------------------------------------------------------------------------------


def encode_json(obj: Any) -> bytes:
    """Encode any supported value (messages, blocks, plain data) as compact JSON."""
    return _json_enc.encode(obj)


def decode_json(data: bytes | str, tp: type[T]) -> T:
    """Decode JSON into ``tp`` with msgspec validation, raising :class:`DecodeError`."""
    try:
        return msgspec.json.decode(data, type=tp)
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from None


def encode_message_json(message: Message) -> bytes:
    """One message as JSON (images as base64)."""
    return _json_enc.encode(message)


def encode_messages_json(messages: Sequence[Message]) -> bytes:
    """A list of messages as one JSON array."""
    return _json_enc.encode(messages)


def encode_message_msgpack(message: Message) -> bytes:
    """One message as MessagePack (bytes stay binary)."""
    return _mp_enc.encode(message)


def encode_messages_msgpack(messages: Sequence[Message]) -> bytes:
    """A list of messages as one MessagePack array."""
    return _mp_enc.encode(messages)


def encode_content(content: Sequence[ContentBlock]) -> bytes:
    """A message's content blocks alone as MessagePack: the storage payload."""
    return _mp_enc.encode(content)


def decode_message_json(data: bytes | str) -> Message:
    """Inverse of :func:`encode_message_json`."""
    return _fast(
        _json_msg.decode,
        _as_bytes(data),
        _JSON,
        lambda: _slow(lambda: _JSON.message(_JSON.raw_message.decode(data), "$")),
    )


def decode_messages_json(data: bytes | str) -> list[Message]:
    """Inverse of :func:`encode_messages_json`."""
    return _fast(
        _json_msgs.decode,
        _as_bytes(data),
        _JSON,
        lambda: _slow(
            lambda: [_JSON.message(m, f"$[{i}]") for i, m in enumerate(_JSON.raw_messages.decode(data))],
        ),
    )


def decode_message_msgpack(data: bytes) -> Message:
    """Inverse of :func:`encode_message_msgpack`."""
    return _fast(
        _mp_msg.decode,
        data,
        _MSGPACK,
        lambda: _slow(lambda: _MSGPACK.message(_MSGPACK.raw_message.decode(data), "$")),
    )


def decode_messages_msgpack(data: bytes) -> list[Message]:
    """Inverse of :func:`encode_messages_msgpack`."""
    return _fast(
        _mp_msgs.decode,
        data,
        _MSGPACK,
        lambda: _slow(
            lambda: [
                _MSGPACK.message(m, f"$[{i}]") for i, m in enumerate(_MSGPACK.raw_messages.decode(data))
            ],
        ),
    )


def decode_content(data: bytes) -> list[ContentBlock]:
    """Inverse of :func:`encode_content` (the hot path of every load: no per-call closures)."""
    try:
        return _mp_content.decode(data)
    except msgspec.ValidationError:
        return _slow(
            lambda: [_MSGPACK.block(b, f"$[{i}]") for i, b in enumerate(_MSGPACK.raw_blocks.decode(data))]
        )
    except msgspec.DecodeError as exc:
        raise DecodeError(f"malformed MessagePack: {exc}") from None


def decode_content_json(data: bytes | str) -> list[ContentBlock]:
    """Content blocks from a JSON array (the same rules as :func:`decode_content`)."""
    return _fast(
        _json_content.decode,
        _as_bytes(data),
        _JSON,
        lambda: _slow(
            lambda: [_JSON.block(b, f"$[{i}]") for i, b in enumerate(_JSON.raw_blocks.decode(data))],
        ),
    )


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data
