"""What an append refuses: any content the read path could not give back.

A store must return what it accepted: a block the typed decoders cannot read (a tool input that
is not a mapping, text where bytes belong, an unknown block posing as a known type with fields
that do not fit) used to be stored and then made the whole session unreadable. So before
anything is written, the payload just encoded is decoded again by the very decoders every read
uses (msgspec's typed path, then the per-block path for unknown and escaped blocks): the SAME
rules, and about 0.5 us per message, which replaced a walk that only checked keys. Two rules
come before encoding, in one walk of the plain data (tool inputs, provider data, unknown blocks):

- mapping keys must be strings, as in JSON (a ``TypeError`` naming the key, as before): JSON
  cannot carry another key, so an export would change it;
- plain data nests at most :data:`MAX_DEPTH` levels: encoders and parsers recurse once per level
  and a deeper value raised ``RecursionError`` (a traceback) instead of a clear refusal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

from ..blocks import (
    AudioBlock,
    Block,
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from ..errors import DecodeError
from .blockwise import MSGPACK

__all__ = [
    "MAX_DEPTH",
    "ROLES",
    "check_content_depth",
    "check_depth",
    "check_role",
    "checked_encode",
    "describe",
    "too_deep",
]

#: How deep plain data may nest: a tool input, provider data or an unknown block is level 1, a
#: container inside it level 2, and so on. Real tool inputs stay far below it; Python's own
#: recursion limit (about 1,000 frames) is what a deeper value would hit.
MAX_DEPTH: Final = 100

#: The roles a message may have.
ROLES: Final = ("user", "assistant", "system")

#: Tuples, not ``X | Y`` unions: on Python 3.11 isinstance with a union is measurably slower.
_CONTAINERS: Final = (dict, list, tuple)
#: Blocks with no plain data to walk (their fields are text, bytes, flags or nested blocks).
_FLAT: Final = frozenset({TextBlock, ImageBlock, AudioBlock, VideoBlock, ReasoningBlock, ToolResultBlock})

_mp_content: Final = msgspec.msgpack.Decoder(list[ContentBlock])


def _plain_ok(value: Any, depth: int) -> bool:
    """Whether every key at any depth of ``value`` (a container at level ``depth``) is a string
    and nothing nests past MAX_DEPTH. Every append runs it: it builds nothing and calls itself
    only for containers."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return False
            if isinstance(v, _CONTAINERS) and not _plain_ok(v, depth + 1):
                return False
    else:
        for v in value:
            if isinstance(v, _CONTAINERS) and not _plain_ok(v, depth + 1):
                return False
    return True


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests containers more than ``limit`` levels deep, without recursing
    (so it also answers for values far deeper than Python's recursion limit)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, _CONTAINERS))
    return False


def check_depth(value: Any, where: str) -> None:
    """:class:`DecodeError` naming ``where`` when ``value`` nests past :data:`MAX_DEPTH`."""
    if isinstance(value, _CONTAINERS) and too_deep(value):
        raise DecodeError(f"{where} nests more than {MAX_DEPTH} levels deep")


def _raise_bad_key(value: Any, where: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(
                    f"{where} has the key {k!r:.80} ({type(k).__name__}); keys must be strings, as in JSON"
                )
            _raise_bad_key(v, f"{where}[{k!r:.40}]")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _raise_bad_key(v, f"{where}[{i}]")


def _plain_data(block: Any) -> tuple[Any, str] | None:
    """The plain data of a block to walk, and how to name it; None for blocks without any."""
    kind = type(block)
    if kind in _FLAT:
        return None
    if kind is ToolUseBlock or isinstance(block, ToolUseBlock):
        return block.input, f"tool_use {block.name!r:.80}) input"
    if kind is ProviderBlock or isinstance(block, ProviderBlock):
        return block.data, "provider) data"
    if kind is UnknownBlock:
        return block.data, f"{block.type!r:.80}) block"
    if isinstance(block, Block):
        return None
    return block, f"{type(block).__name__}) value"


def _check_plain(content: Sequence[Any]) -> None:
    for i, block in enumerate(content):
        found = _plain_data(block)
        if found is None:
            continue
        value, what = found
        if isinstance(value, _CONTAINERS) and not _plain_ok(value, 1):
            check_depth(value, f"content[{i}] ({what}")
            _raise_bad_key(value, f"block {i} ({what}")


def check_content_depth(content: Sequence[Any], where: str) -> None:
    """:class:`DecodeError` naming ``where`` and the block when a block's plain data (a tool
    input, provider data, an unknown block) nests past :data:`MAX_DEPTH`: for readers of
    decoded content (a transcript import), which refuse it as an append would."""
    for i, block in enumerate(content):
        found = _plain_data(block)
        if found is not None:
            check_depth(found[0], f"{where}[{i}] ({found[1]}")


def check_role(role: object) -> None:
    """:class:`DecodeError` unless ``role`` is one the read path accepts."""
    if not isinstance(role, str) or role not in ROLES:
        raise DecodeError(f"role: expected 'user', 'assistant' or 'system', got {role!r:.80}")


def describe(block: Any) -> str:
    """A block's ``type`` for an error message."""
    if isinstance(block, Block):
        return str(type(block).__struct_config__.tag)
    if isinstance(block, UnknownBlock):
        return block.type
    if isinstance(block, dict):
        return repr(block.get("type"))[:80]
    return type(block).__name__


_AT: Final = re.compile(r"^(.*) - at `\$\.?(.*)`$", re.S)


def _field_error(text: str) -> str:
    """msgspec's "Expected `x`, got `y` - at `$.input`" as "input: expected `x`, got `y`"."""
    m = _AT.match(text)
    message, field = (m.group(1), m.group(2)) if m else (text, "")
    message = message[:1].lower() + message[1:]
    return f"{field}: {message}" if field else message


def _check_decodes(content: Sequence[Any], payload: bytes) -> None:
    """:class:`DecodeError` naming the block and field unless ``payload`` reads back."""
    try:
        _mp_content.decode(payload)
        return
    except msgspec.ValidationError:
        pass  # an unknown or escaped block, or a real mistake: the per-block path tells
    for i, raw in enumerate(MSGPACK.raw_blocks.decode(payload)):
        try:
            MSGPACK.block(raw, "$")
        except DecodeError as exc:
            raise DecodeError(f"content[{i}] ({describe(content[i])}): {_field_error(str(exc))}") from None


def checked_encode(
    content: Sequence[ContentBlock], encode: Callable[[Sequence[ContentBlock]], bytes]
) -> bytes:
    """``encode(content)``, refused unless the read path gives the content back (see the module
    docstring): :class:`DecodeError` naming the block and field, ``TypeError`` for a key that is
    not a string or a value the encoder does not support."""
    if not isinstance(content, list | tuple):
        raise DecodeError(f"content: expected a list of blocks, got {type(content).__name__}")
    _check_plain(content)
    try:
        payload = encode(content)
    except RecursionError:
        raise DecodeError(f"content nests more than {MAX_DEPTH} levels deep") from None
    _check_decodes(content, payload)
    return payload
