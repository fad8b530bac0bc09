"""The codec's slow path: decoding block by block.

Taken only when msgspec's typed fast path refuses a payload: an unknown block type from a newer
version (kept as an :class:`UnknownBlock`), an escaped block (see :mod:`.escaping`), JSON with
what msgspec cannot read (restored by :mod:`axio_context._json`), or genuinely bad data, which
becomes a :class:`DecodeError` naming the exact field.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, TypeVar, cast

import msgspec

from .._json import ExactDecoder
from ..blocks import (
    KNOWN_BLOCK_TYPES,
    NESTED_BLOCK_TYPES,
    ContentBlock,
    UnknownBlock,
    has_unknown_fields,
    has_unknown_nested,
)
from ..errors import DecodeError
from ..messages import Message, Role
from .escaping import ESCAPED_TYPE, MP_NATIVE, ext_hook

__all__ = [
    "JSON",
    "MSGPACK",
    "Format",
    "block_from_tree",
    "convert",
    "fast",
    "slow",
    "where_in",
]

T = TypeVar("T")


class _RawMessage(msgspec.Struct):
    role: Role
    content: list[msgspec.Raw] = msgspec.field(default_factory=list)
    id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None


class _TypeOnly(msgspec.Struct):
    type: str


class _NestedTypes(msgspec.Struct):
    content: str | list[_TypeOnly]


class _EscapedBlock(msgspec.Struct):
    block: Any


class _TreeMessage(msgspec.Struct):
    role: Role
    content: list[Any] = msgspec.field(default_factory=list)


_mp_escaped: Final = msgspec.msgpack.Decoder(_EscapedBlock, ext_hook=ext_hook)


class Format:
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
            raise DecodeError(where_in(exc, where)) from None
        dec = self.blocks.get(kind)
        if dec is None:
            if kind == ESCAPED_TYPE and self._escaped:
                return _unescape_block(raw, where)
            return UnknownBlock(self.any.decode(raw))
        try:
            block: ContentBlock = dec.decode(raw)
        except msgspec.ValidationError as exc:
            if has_unknown_fields(exc) or (kind == "tool_result" and self._nested_unknown(raw)):
                return UnknownBlock(self.any.decode(raw))
            raise DecodeError(where_in(exc, where)) from None
        return block

    def _nested_unknown(self, raw: msgspec.Raw) -> bool:
        try:
            nested = self.nested.decode(raw).content
        except msgspec.DecodeError:
            return False
        return not isinstance(nested, str) and any(t.type not in NESTED_BLOCK_TYPES for t in nested)

    def message(self, raw: _RawMessage, where: str) -> Message:
        content = [self.block(b, f"{where}.content[{i}]") for i, b in enumerate(raw.content)]
        return Message(
            role=raw.role, content=content, id=raw.id, timestamp=raw.timestamp, metadata=raw.metadata
        )


def where_in(exc: Exception, where: str) -> str:
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
        raise DecodeError(where_in(exc, where)) from None
    return block_from_tree(inner, f"{where}.block", MP_NATIVE)


def block_from_tree(tree: Any, where: str, native: tuple[type, ...]) -> ContentBlock:
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
        return cast(ContentBlock, convert(tree, cls, where, native))
    except DecodeError as exc:
        if has_unknown_fields(exc) or (kind == "tool_result" and has_unknown_nested(tree)):
            return UnknownBlock(tree)
        raise


def convert(tree: Any, tp: Any, where: str, native: tuple[type, ...] = ()) -> Any:
    """``msgspec.convert``, its errors as DecodeError naming the field."""
    try:
        return msgspec.convert(tree, tp, builtin_types=native)
    except msgspec.ValidationError as exc:
        raise DecodeError(where_in(exc, where)) from None
    except UnicodeEncodeError:
        # msgspec reads a string given for another type as UTF-8, which a lone surrogate is not
        raise DecodeError(f"Expected another type than text with a lone surrogate - at `{where}`") from None


JSON: Final = Format(lambda tp: ExactDecoder(tp), "JSON")
MSGPACK: Final = Format(lambda tp: msgspec.msgpack.Decoder(tp), "MessagePack", escaped=True)


def fast(decode: Callable[[bytes], T], data: bytes, fmt: Format, slow: Callable[[], T]) -> T:
    """``decode`` (msgspec's typed fast path), else the per-block ``slow`` path."""
    try:
        return decode(data)
    except msgspec.ValidationError:
        return slow()
    except msgspec.DecodeError as exc:
        raise DecodeError(f"malformed {fmt.name}: {exc}") from None


def slow(step: Callable[[], T]) -> T:
    try:
        return step()
    except msgspec.DecodeError as exc:
        raise DecodeError(str(exc)) from None
