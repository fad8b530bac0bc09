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

**Mapping keys** in tool inputs and provider data must be strings, as in JSON (a model's tool
input always has them): :func:`encode_content`, the storage payload, refuses another key with a
``TypeError`` naming it. JSON cannot carry it, and a ``dict[str, Any]`` field holding one fails
the typed decoder on every later read, which made the whole stored session unreadable.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar, cast

import msgspec

from ._json import (
    _enc_hook,
    _has_nonfinite,
    _json_enc,
    _json_exact,
    _json_tree,
    _mark,
    _unmark,
    contents_have_nonfinite,
    decode_json_exact,
)
from .blocks import (
    _NESTED_TYPES,
    KNOWN_BLOCK_TYPES,
    ContentBlock,
    ProviderBlock,
    ToolUseBlock,
    UnknownBlock,
    _has_unknown_nested,
)
from .errors import DecodeError
from .messages import SURROGATE, Message, Role

__all__ = [
    "ESCAPED_TYPE",
    "EXT_BIGINT",
    "EXT_STR",
    "contents_have_nonfinite",
    "decode_content",
    "decode_content_json",
    "decode_json",
    "decode_json_exact",
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
    "format_json",
]

T = TypeVar("T")


#: The ``type`` of a stored (MessagePack) block wrapping one that holds values MessagePack
#: cannot carry as they are; never written to JSON.
ESCAPED_TYPE: Final = "axio-context/escaped"
#: MessagePack ext code of an integer outside 64 bits: two's complement, big-endian.
EXT_BIGINT: Final = 1
#: MessagePack ext code of a string with lone surrogates: UTF-8 with ``surrogatepass``.
EXT_STR: Final = 2


class _ReservedType(Exception):
    """An UnknownBlock whose type is :data:`ESCAPED_TYPE`: it must be wrapped to read back as it is."""


class _ExtKey:
    """A mapping key that must be written as an ext (an ext itself is not hashable)."""

    __slots__ = ("ext",)

    def __init__(self, ext: msgspec.msgpack.Ext) -> None:
        self.ext = ext

    def __hash__(self) -> int:
        return hash((self.ext.code, self.ext.data))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ExtKey) and (other.ext.code, other.ext.data) == (
            self.ext.code,
            self.ext.data,
        )


def _mp_enc_hook(obj: Any) -> Any:
    if isinstance(obj, UnknownBlock):
        if obj.data.get("type") == ESCAPED_TYPE:
            raise _ReservedType
        return obj.data
    if isinstance(obj, _ExtKey):
        return obj.ext
    raise NotImplementedError(f"cannot encode objects of type {type(obj).__name__}")


def _ext_hook(code: int, data: memoryview) -> Any:
    if code == EXT_BIGINT:
        return int.from_bytes(data, "big", signed=True)
    if code == EXT_STR:
        return bytes(data).decode("utf-8", "surrogatepass")
    return msgspec.msgpack.Ext(code, bytes(data))


_mp_enc: Final = msgspec.msgpack.Encoder(enc_hook=_mp_enc_hook)

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


class _EscapedBlock(msgspec.Struct):
    block: Any


class _TreeMessage(msgspec.Struct):
    role: Role
    content: list[Any] = msgspec.field(default_factory=list)


#: What MessagePack carries natively and JSON as text: kept as they are when a block is built
#: from decoded MessagePack (so a string is never taken for base64 bytes).
_MP_NATIVE: Final = (bytes, bytearray, memoryview, datetime.datetime)
_mp_escaped: Final = msgspec.msgpack.Decoder(_EscapedBlock, ext_hook=_ext_hook)


class _Format:
    """The per-format decoders the slow path needs, built once."""

    def __init__(self, decode: Callable[..., Any], name: str, *, escaped: bool = False) -> None:
        self.name = name
        self._decoder = decode
        self._escaped = escaped
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
            if kind == ESCAPED_TYPE and self._escaped:
                return _unescape_block(raw, where)
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
        return not isinstance(nested, str) and any(t.type not in _NESTED_TYPES for t in nested)

    def message(self, raw: _RawMessage, where: str) -> Message:
        content = [self.block(b, f"{where}.content[{i}]") for i, b in enumerate(raw.content)]
        return Message(role=raw.role, content=content)


def _where(exc: Exception, where: str) -> str:
    """Rewrite msgspec's ``$``-rooted path so it points into the whole document."""
    text = str(exc)
    if "`$" in text:
        return text.replace("`$", f"`{where}", 1)
    return f"{text} - at `{where}`"


def _unescape_block(raw: msgspec.Raw, where: str) -> ContentBlock:
    """The block a stored :data:`ESCAPED_TYPE` wrapper holds, its ext values restored."""
    try:
        inner = _mp_escaped.decode(raw).block
    except msgspec.DecodeError as exc:
        raise DecodeError(_where(exc, where)) from None
    return _block_from_tree(inner, f"{where}.block", _MP_NATIVE)


def _block_from_tree(tree: Any, where: str, native: tuple[type, ...]) -> ContentBlock:
    """A block from its decoded builtin form, by the rules of the per-block path."""
    if not isinstance(tree, dict):
        raise DecodeError(f"Expected `object`, got `{type(tree).__name__}` - at `{where}`")
    kind = tree.get("type")
    if not isinstance(kind, str):
        raise DecodeError(f"Object missing required field `type` - at `{where}`")
    cls = KNOWN_BLOCK_TYPES.get(kind)
    if cls is None:
        return UnknownBlock(tree)
    try:
        return cast(ContentBlock, _convert(tree, cls, where, native))
    except DecodeError:
        if kind == "tool_result" and _has_unknown_nested(tree):
            return UnknownBlock(tree)
        raise


def _convert(tree: Any, tp: Any, where: str, native: tuple[type, ...] = ()) -> Any:
    """``msgspec.convert``, its errors as DecodeError naming the field."""
    try:
        return msgspec.convert(tree, tp, builtin_types=native)
    except msgspec.ValidationError as exc:
        raise DecodeError(_where(exc, where)) from None
    except UnicodeEncodeError:
        # msgspec reads a string given for another type as UTF-8, which a lone surrogate is not
        raise DecodeError(f"Expected another type than text with a lone surrogate - at `{where}`") from None


def _message_from_tree(tree: Any, where: str) -> Message:
    shell = _convert(tree, _TreeMessage, where)
    content = [_block_from_tree(b, f"{where}.content[{i}]", ()) for i, b in enumerate(shell.content)]
    return Message(role=shell.role, content=content)


def _list_tree(tree: Any) -> list[Any]:
    if not isinstance(tree, list):
        raise DecodeError(f"Expected `array`, got `{type(tree).__name__}`")
    return tree


_JSON: Final = _Format(lambda tp: msgspec.json.Decoder(tp), "JSON")
_MSGPACK: Final = _Format(lambda tp: msgspec.msgpack.Decoder(tp), "MessagePack", escaped=True)


def _fast(
    decode: Callable[[bytes], T],
    data: bytes,
    fmt: _Format,
    slow: Callable[[], T],
    tree: Callable[[Any], T] | None = None,
) -> T:
    """``decode`` (msgspec's typed fast path), else the per-block ``slow`` path; for JSON that
    msgspec refuses for its lone surrogates, ``tree`` builds the result from restored builtins."""
    try:
        return decode(data)
    except msgspec.ValidationError:
        try:
            return slow()
        except DecodeError:
            restored = None if tree is None else _json_tree(data)
            if restored is None:
                raise
            return tree(restored[0])  # type: ignore[misc]
    except msgspec.DecodeError as exc:
        restored = None if tree is None else _json_tree(data)
        if restored is not None:
            return tree(restored[0])  # type: ignore[misc]
        raise DecodeError(f"malformed {fmt.name}: {exc}") from None


def _slow(step: Callable[[], T]) -> T:
    try:
        return step()
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from None


# --- MessagePack: integers past 64 bits and lone surrogates --------------------------------------

_INT_MIN: Final = -(2**63)
_UINT_MAX: Final = 2**64 - 1
#: What the MessagePack encoder handles itself (so a fallback encodes them exactly as it would).
_ALL_NATIVE: Final = (
    bytes,
    bytearray,
    memoryview,
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    uuid.UUID,
    decimal.Decimal,
)
#: What msgspec raises for a value the fast path cannot write (and the reserved block type).
_ESCAPE_ON: Final = (OverflowError, UnicodeEncodeError, _ReservedType)


def _mp_value(value: Any) -> Any:
    """``value`` with every integer past 64 bits and string with lone surrogates as an ext; the
    very same object when nothing needed it."""
    if isinstance(value, str):
        if value.isascii() or SURROGATE.search(value) is None:
            return value
        return msgspec.msgpack.Ext(EXT_STR, value.encode("utf-8", "surrogatepass"))
    if isinstance(value, int):
        if _INT_MIN <= value <= _UINT_MAX:
            return value
        return msgspec.msgpack.Ext(
            EXT_BIGINT, value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
        )
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        changed = False
        for k, v in value.items():
            k2, v2 = _mp_value(k), _mp_value(v)
            if isinstance(k2, msgspec.msgpack.Ext):
                k2 = _ExtKey(k2)
            changed = changed or k2 is not k or v2 is not v
            out[k2] = v2
        return out if changed else value
    if isinstance(value, list):
        items = [_mp_value(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


def _mp_blocks(content: Sequence[ContentBlock]) -> list[Any]:
    """``content`` with each block MessagePack cannot carry as it is wrapped as ESCAPED_TYPE."""
    out: list[Any] = []
    for block in content:
        try:
            tree = msgspec.to_builtins(block, builtin_types=_ALL_NATIVE, enc_hook=_enc_hook)
        except NotImplementedError as exc:  # as the encoder reports an unsupported type
            raise TypeError(str(exc)) from None
        escaped = _mp_value(tree)
        if escaped is tree and tree.get("type") != ESCAPED_TYPE:
            out.append(block)  # written as the fast path writes it
        else:
            out.append({"type": ESCAPED_TYPE, "block": escaped})
    return out


def _mp_message(message: Message) -> Message:
    return Message(role=message.role, content=cast(list[ContentBlock], _mp_blocks(message.content)))


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
    if exact and _has_nonfinite(obj):
        return _json_exact(obj)
    try:
        return _json_enc.encode(obj)
    except UnicodeEncodeError:
        return _json_exact(obj)


def format_json(obj: Any, indent: int = 2) -> bytes:
    """``obj`` as indented JSON for people; lone surrogates stay ``\\uXXXX`` escapes and
    non-finite numbers ``NaN``/``Infinity`` (msgspec's formatter alone refuses both)."""
    data = encode_json(obj, exact=True)
    try:
        return msgspec.json.format(data, indent=indent)
    except msgspec.DecodeError:
        marked = _mark(data)
        if marked is None:
            raise
        return _unmark(msgspec.json.format(marked[0], indent=indent), marked[1])


def decode_json(data: bytes | str, tp: type[T]) -> T:
    """Decode JSON into ``tp`` with msgspec validation, raising :class:`DecodeError`."""
    try:
        return msgspec.json.decode(data, type=tp)
    except msgspec.ValidationError as exc:
        raise DecodeError(str(exc)) from None
    except msgspec.DecodeError as exc:
        restored = _json_tree(_as_bytes(data))
        if restored is None:
            raise DecodeError(str(exc)) from None
        return cast(T, _convert(restored[0], tp, "$"))


def encode_message_json(message: Message) -> bytes:
    """One message as JSON (images as base64)."""
    return encode_json(message)


def encode_messages_json(messages: Sequence[Message]) -> bytes:
    """A list of messages as one JSON array."""
    return encode_json(messages)


def encode_message_msgpack(message: Message) -> bytes:
    """One message as MessagePack (bytes stay binary)."""
    try:
        return _mp_enc.encode(message)
    except _ESCAPE_ON:
        return _mp_enc.encode(_mp_message(message))


def encode_messages_msgpack(messages: Sequence[Message]) -> bytes:
    """A list of messages as one MessagePack array."""
    try:
        return _mp_enc.encode(messages)
    except _ESCAPE_ON:
        return _mp_enc.encode([_mp_message(m) for m in messages])


#: Tuples, not ``X | Y`` unions: on Python 3.11 isinstance with a union is measurably slower.
_CONTAINERS: Final = (dict, list, tuple)
#: The blocks whose plain data :func:`_check_keys` walks.
_KEYED: Final = (ToolUseBlock, ProviderBlock)


def _str_keys_only(value: Any) -> bool:
    """Whether every mapping key, at any depth of ``value`` (a dict, list or tuple), is a string.
    Every append runs it, so it builds nothing and calls itself only for containers."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return False
            if isinstance(v, _CONTAINERS) and not _str_keys_only(v):
                return False
    else:
        for v in value:
            if isinstance(v, _CONTAINERS) and not _str_keys_only(v):
                return False
    return True


def _check_keys(block: ToolUseBlock | ProviderBlock, index: int) -> None:
    """Raise TypeError for a mapping key, at any depth of a tool input or provider data, that is
    not a string, naming where; the path is built only once such a key is found."""
    value = block.input if isinstance(block, ToolUseBlock) else block.data
    if isinstance(value, _CONTAINERS) and not _str_keys_only(value):
        what = f"tool_use {block.name!r}) input" if isinstance(block, ToolUseBlock) else "provider) data"
        _raise_bad_key(value, f"block {index} ({what}")


def _raise_bad_key(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(
                    f"{where} has the key {k!r} ({type(k).__name__}); keys must be strings, as in JSON"
                )
            _raise_bad_key(v, f"{where}[{k!r}]")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _raise_bad_key(v, f"{where}[{i}]")


def encode_content(content: Sequence[ContentBlock]) -> bytes:
    """A message's content blocks alone as MessagePack: the storage payload."""
    for i, block in enumerate(content):
        if isinstance(block, _KEYED):
            _check_keys(block, i)
    try:
        return _mp_enc.encode(content)
    except _ESCAPE_ON:
        return _mp_enc.encode(_mp_blocks(content))


def decode_message_json(data: bytes | str) -> Message:
    """Inverse of :func:`encode_message_json`."""
    raw = _as_bytes(data)
    return _fast(
        _json_msg.decode,
        raw,
        _JSON,
        lambda: _slow(lambda: _JSON.message(_JSON.raw_message.decode(raw), "$")),
        lambda tree: _message_from_tree(tree, "$"),
    )


def decode_messages_json(data: bytes | str) -> list[Message]:
    """Inverse of :func:`encode_messages_json`."""
    raw = _as_bytes(data)
    return _fast(
        _json_msgs.decode,
        raw,
        _JSON,
        lambda: _slow(
            lambda: [_JSON.message(m, f"$[{i}]") for i, m in enumerate(_JSON.raw_messages.decode(raw))],
        ),
        lambda tree: [_message_from_tree(m, f"$[{i}]") for i, m in enumerate(_list_tree(tree))],
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
    raw = _as_bytes(data)
    return _fast(
        _json_content.decode,
        raw,
        _JSON,
        lambda: _slow(
            lambda: [_JSON.block(b, f"$[{i}]") for i, b in enumerate(_JSON.raw_blocks.decode(raw))],
        ),
        lambda tree: [_block_from_tree(b, f"$[{i}]", ()) for i, b in enumerate(_list_tree(tree))],
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
