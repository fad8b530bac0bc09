"""What an append refuses: any content the read path could not give back.

A store must return what it accepted: a block the typed decoders cannot read (a tool input that
is not a mapping, text where bytes belong, an unknown block posing as a known type with fields
that do not fit) used to be stored and then made the whole session unreadable. So before
anything is written, the payload just encoded is decoded again by the very decoders every read
uses (msgspec's typed path, then the per-block path for unknown and escaped blocks): the SAME
rules. To keep appends cheap, a block whose fields have exactly their declared Python types
(``str``, ``bytes``, ``bool``, a ``dict`` input) skips the decoding: such a block always reads
back, so only blocks that might not are decoded. Two rules
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
    KNOWN_BLOCK_TYPES,
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
from .escaping import ESCAPED_TYPE

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


def _plain_value(block: Any) -> Any:
    """The plain data of a block to walk (None for blocks without any)."""
    if isinstance(block, ToolUseBlock):
        return block.input
    if isinstance(block, ProviderBlock):
        return block.data
    if isinstance(block, UnknownBlock):
        return block.data
    if isinstance(block, Block):
        return None
    return block


def _plain_name(block: Any) -> str:
    """How an error names a block's plain data (built only for an error)."""
    if isinstance(block, ToolUseBlock):
        return f"tool_use {block.name!r:.80}) input"
    if isinstance(block, ProviderBlock):
        return "provider) data"
    if isinstance(block, UnknownBlock):
        return f"{block.type!r:.80}) block"
    return f"{type(block).__name__}) value"


def _check_plain(content: Sequence[Any]) -> bool:
    """Walk every block's plain data (keys, depth), raising for what is refused; return whether
    every block is certainly fine (see :data:`_CERTAIN`), in the same pass."""
    fine = True
    for i, block in enumerate(content):
        kind = type(block)
        if fine:
            check = _CERTAIN.get(kind)
            fine = check is not None and check(block)
        if kind in _FLAT:
            continue
        value = _plain_value(block)
        if isinstance(value, _CONTAINERS) and not _plain_ok(value, 1):
            what = _plain_name(block)
            check_depth(value, f"content[{i}] ({what}")
            _raise_bad_key(value, f"block {i} ({what}")
    return fine


def check_content_depth(content: Sequence[Any], where: str) -> None:
    """:class:`DecodeError` naming ``where`` and the block when a block's plain data (a tool
    input, provider data, an unknown block) nests past :data:`MAX_DEPTH`: for readers of
    decoded content (a transcript import), which refuse it as an append would."""
    for i, block in enumerate(content):
        if type(block) not in _FLAT:
            check_depth(_plain_value(block), f"{where}[{i}] ({_plain_name(block)}")


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


def _text_ok(b: Any) -> bool:
    return type(b.text) is str and type(b.signature) is str and type(b.provider) is str


def _media_ok(b: Any) -> bool:
    return type(b.media_type) is str and type(b.data) is bytes


def _tool_use_ok(b: Any) -> bool:
    return (
        type(b.id) is str
        and type(b.name) is str
        and type(b.input) is dict
        and type(b.signature) is str
        and type(b.provider) is str
    )


def _tool_result_ok(b: Any) -> bool:
    if type(b.tool_use_id) is not str or type(b.is_error) is not bool:
        return False
    content = b.content
    if type(content) is str:
        return True
    return type(content) is list and all(type(i) in _NESTED_OK and _NESTED_OK[type(i)](i) for i in content)


def _reasoning_ok(b: Any) -> bool:
    return (
        type(b.text) is str
        and type(b.signature) is str
        and type(b.redacted) is bool
        and type(b.id) is str
        and type(b.provider) is str
    )


def _provider_ok(b: Any) -> bool:
    return type(b.provider) is str and type(b.kind) is str and type(b.data) is dict and type(b.id) is str


def _unknown_ok(b: Any) -> bool:
    return b.data["type"] not in _DECODED_TYPES


#: Per block type, a check of the exact Python types of its fields, narrower than what the typed
#: decoders accept: a block that passes it always reads back (plain data was walked before), so
#: its decoding is skipped. Anything else (a subclass, a str where bytes belong, an unknown block
#: posing as a known type) goes through the decoders themselves.
_NESTED_OK: Final[dict[type, Callable[[Any], bool]]] = {
    TextBlock: _text_ok,
    ImageBlock: _media_ok,
    AudioBlock: _media_ok,
    VideoBlock: _media_ok,
}
_CERTAIN: Final[dict[type, Callable[[Any], bool]]] = {
    **_NESTED_OK,
    ToolUseBlock: _tool_use_ok,
    ToolResultBlock: _tool_result_ok,
    ReasoningBlock: _reasoning_ok,
    ProviderBlock: _provider_ok,
    UnknownBlock: _unknown_ok,
}
#: Unknown-block types the decoders do not keep as given: the known ones and the escape wrapper.
_DECODED_TYPES: Final = frozenset({*KNOWN_BLOCK_TYPES, ESCAPED_TYPE})


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
    fine = _check_plain(content)
    try:
        payload = encode(content)
    except RecursionError:
        raise DecodeError(f"content nests more than {MAX_DEPTH} levels deep") from None
    if not fine:
        _check_decodes(content, payload)
    return payload
