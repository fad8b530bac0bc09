"""MessagePack escaping: integers past 64 bits and strings with lone surrogates, stored losslessly.

Part of :mod:`axio_context.codec` (its docstring describes the stored form): a block holding such
a value is wrapped as ``{"type": ESCAPED_TYPE, "block": ...}`` with the values as exts.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Sequence
from typing import Any, Final, cast

import msgspec

from .._json import json_enc_hook
from ..blocks import ContentBlock, UnknownBlock
from ..messages import SURROGATE, Message

__all__ = [
    "ALL_NATIVE",
    "ESCAPED_TYPE",
    "ESCAPE_ON",
    "EXT_BIGINT",
    "EXT_STR",
    "MP_NATIVE",
    "ext_hook",
    "mp_blocks",
    "mp_enc",
    "mp_message",
]


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


def ext_hook(code: int, data: memoryview) -> Any:
    if code == EXT_BIGINT:
        return int.from_bytes(data, "big", signed=True)
    if code == EXT_STR:
        return bytes(data).decode("utf-8", "surrogatepass")
    return msgspec.msgpack.Ext(code, bytes(data))


mp_enc: Final = msgspec.msgpack.Encoder(enc_hook=_mp_enc_hook)


#: What MessagePack carries natively and JSON as text: kept as they are when a block is built
#: from decoded MessagePack (so a string is never taken for base64 bytes).
MP_NATIVE: Final = (bytes, bytearray, memoryview, datetime.datetime)

_INT_MIN: Final = -(2**63)
_UINT_MAX: Final = 2**64 - 1
#: What the MessagePack encoder handles itself (so a fallback encodes them exactly as it would).
ALL_NATIVE: Final = (
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
ESCAPE_ON: Final = (OverflowError, UnicodeEncodeError, _ReservedType)


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


def mp_blocks(content: Sequence[ContentBlock]) -> list[Any]:
    """``content`` with each block MessagePack cannot carry as it is wrapped as ESCAPED_TYPE."""
    out: list[Any] = []
    for block in content:
        try:
            tree = msgspec.to_builtins(block, builtin_types=ALL_NATIVE, enc_hook=json_enc_hook)
        except NotImplementedError as exc:  # as the encoder reports an unsupported type
            raise TypeError(str(exc)) from None
        escaped = _mp_value(tree)
        if escaped is tree and tree.get("type") != ESCAPED_TYPE:
            out.append(block)  # written as the fast path writes it
        else:
            out.append({"type": ESCAPED_TYPE, "block": escaped})
    return out


def mp_message(message: Message) -> Message:
    return msgspec.structs.replace(message, content=cast(list[ContentBlock], mp_blocks(message.content)))
