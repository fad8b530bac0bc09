"""Exact JSON: what msgspec's JSON cannot carry as it is, written and read back losslessly.

Part of :mod:`axio_context.codec`, which uses it; kept apart because it is a text-level
mechanism of its own.

- A lone surrogate is written as the standard ``\\uXXXX`` escape (what Python's ``json`` and
  JavaScript write). msgspec refuses one when reading, so such text is decoded with markers in
  place of those escapes, and every string is restored afterwards. A high surrogate directly
  followed by a low one cannot be told apart from the character they pair to in JSON; encoding
  one raises :class:`DecodeError` rather than change it.
- JSON has no NaN or infinity (MessagePack stores them as they are). msgspec writes them as
  ``null``; the lossless exports ask :func:`.codec.encode_json` for ``exact=True``, which writes
  ``NaN``/``Infinity``/``-Infinity`` (Python's ``json`` and JSON5 spell them so), and every JSON
  decoder of the codec reads them back (:func:`decode_json_exact`).
- Integers of any size are plain JSON numbers already.
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any, Final, Generic, TypeVar, cast

import msgspec

from .blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from .errors import DecodeError
from .messages import SURROGATE

__all__ = [
    "ExactDecoder",
    "contents_have_nonfinite",
    "decode_json_exact",
    "has_nonfinite",
    "json_enc",
    "json_enc_hook",
    "json_exact",
    "mark",
    "unmark",
]

T = TypeVar("T")


def json_enc_hook(obj: Any) -> Any:
    if isinstance(obj, UnknownBlock):
        return obj.data
    raise NotImplementedError(f"cannot encode objects of type {type(obj).__name__}")


json_enc: Final = msgspec.json.Encoder(enc_hook=json_enc_hook)


#: A JSON string token (the unrolled form: no backtracking on long strings), or a non-finite
#: number (group 1) outside strings, where JSON has none; never in a key's place (left as it is,
#: so the text stays malformed).
_JSON_TOKEN: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(NaN|-?Infinity)(?![ \t\r\n]*:)', re.S)
#: Inside a string: a surrogate pair (group 1, kept), a lone surrogate (group 2), another escape.
_JSON_ESCAPE: Final = re.compile(
    rb"\\(?:(u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|u([dD][89a-fA-F][0-9a-fA-F]{2})|.)",
    re.S,
)
_EXACT_HINT: Final = re.compile(rb"\\u[dD][89a-fA-F]|NaN|Infinity")
#: Non-finite numbers as Python's ``json`` and JSON5 spell them (JSON itself has none).
_NONFINITE_JSON: Final = {b"NaN": "n", b"Infinity": "i", b"-Infinity": "-i"}
_NONFINITE_MARK: Final = {v: k for k, v in _NONFINITE_JSON.items()}
_NONFINITE_VALUE: Final = {"n": float("nan"), "i": float("inf"), "-i": float("-inf")}
_json_any: Final = msgspec.json.Decoder(Any)


def _json_str(text: str, where: str) -> msgspec.Raw:
    """``text`` as a JSON string token, lone surrogates as ``\\uXXXX`` escapes."""
    parts: list[bytes] = []
    previous = ""
    for piece in _SURROGATE_SPLIT.split(text):
        if len(piece) == 1 and "\ud800" <= piece <= "\udfff":
            if "\udc00" <= piece <= "\udfff" and "\ud800" <= previous <= "\udbff":
                paired = 0x10000 + (ord(previous) - 0xD800) * 0x400 + ord(piece) - 0xDC00
                raise DecodeError(
                    f"text holds U+{ord(previous):04X} directly followed by U+{ord(piece):04X}, which JSON "
                    f"can only write as the one character U+{paired:04X} - at `{where}`"
                )
            parts.append(b"\\u%04x" % ord(piece))
        elif piece:
            parts.append(json_enc.encode(piece)[1:-1])
        previous = piece[-1:] if piece else previous
    return msgspec.Raw(b'"' + b"".join(parts) + b'"')


_SURROGATE_SPLIT: Final = re.compile(f"({SURROGATE.pattern})")


def _json_number(value: float) -> Any:
    if value == value and value not in (_INF, -_INF):
        return value
    return msgspec.Raw(b"NaN" if value != value else b"Infinity" if value > 0 else b"-Infinity")


_INF: Final = float("inf")


def _json_value(value: Any, where: str) -> Any:
    """``value`` (builtins) with what msgspec's JSON encoder cannot write as raw JSON."""
    if isinstance(value, str):
        return value if value.isascii() or SURROGATE.search(value) is None else _json_str(value, where)
    if isinstance(value, float):
        return _json_number(value)
    if isinstance(value, dict):
        if any(isinstance(k, str) and SURROGATE.search(k) for k in value):
            members = [
                (bytes(_json_str(k, where)) if isinstance(k, str) else json_enc.encode({k: None})[1:-6])
                + b":"
                + json_enc.encode(_json_value(v, f"{where}.{k}"))
                for k, v in value.items()
            ]
            return msgspec.Raw(b"{" + b",".join(members) + b"}")
        return {k: _json_value(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def json_exact(obj: Any) -> bytes:
    """``obj`` as JSON through its builtin form: lone surrogates escaped, non-finite numbers as
    ``NaN``/``Infinity``/``-Infinity``."""
    return json_enc.encode(_json_value(msgspec.to_builtins(obj, enc_hook=json_enc_hook), "$"))


def has_nonfinite(value: Any) -> bool:
    """Whether ``value`` (a record, message, block or plain data) holds a NaN or an infinity.

    Only plain data holds floats: a Struct is walked only through its fields whose declared type
    can hold one (a tool input, provider data, a record's content), and scalars and blocks of
    text, bytes and flags are skipped without a call (an export runs this on every record).
    """
    kind = type(value)
    fields = _FLOAT_FIELDS.get(kind)
    if fields is not None:
        for name in fields:
            item = getattr(value, name)
            if type(item) not in _SKIP and has_nonfinite(item):
                return True
        return False
    if kind is float:
        return value != value or value in (_INF, -_INF)
    if kind is dict or kind is list or kind is tuple:
        for item in value.values() if kind is dict else value:
            inner = type(item)
            if inner in _SKIP:
                continue
            fields = _FLOAT_FIELDS.get(inner)
            if fields is None:
                if has_nonfinite(item):
                    return True
                continue
            for name in fields:  # one level inline: most lists hold records or blocks
                sub = getattr(item, name)
                if type(sub) not in _SKIP and has_nonfinite(sub):
                    return True
        return False
    if kind is UnknownBlock:
        return has_nonfinite(value.data)
    if isinstance(value, msgspec.Struct):
        try:
            names = tuple(f.name for f in msgspec.structs.fields(kind) if _may_hold_float(f.type))
        except (NameError, TypeError):  # annotations that do not resolve: walk every field
            names = kind.__struct_fields__
        _FLOAT_FIELDS[kind] = names
        return has_nonfinite(value)
    if isinstance(value, float):  # a subclass
        return not math.isfinite(value)
    if isinstance(value, dict):
        return has_nonfinite(dict(value))
    return isinstance(value, list | tuple) and has_nonfinite(list(value))


def contents_have_nonfinite(contents: Iterable[Sequence[ContentBlock]]) -> bool:
    """Whether any of these messages' contents holds a NaN or an infinity: the tight loop an
    export runs on every batch of messages before choosing ``encode_json(..., exact=True)``."""
    for content in contents:
        for block in content:
            kind = type(block)
            if kind in _SKIP:
                continue
            if isinstance(block, ToolUseBlock):
                if has_nonfinite(block.input):
                    return True
            elif has_nonfinite(block):
                return True
    return False


#: Per Struct type, the fields whose declared type can hold a float (filled on first use).
_FLOAT_FIELDS: Final[dict[type[Any], tuple[str, ...]]] = {}


def _may_hold_float(tp: Any) -> bool:
    if tp in (str, int, bool, bytes, type(None)):
        return False
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return False
    if origin is typing.Union or origin is types.UnionType:
        return any(_may_hold_float(arg) for arg in typing.get_args(tp))
    return True


#: Scalars, and blocks whose fields are all text, bytes or flags: no float inside.
_SKIP: Final = frozenset(
    {
        str,
        bytes,
        int,
        bool,
        type(None),
        TextBlock,
        ImageBlock,
        AudioBlock,
        VideoBlock,
        ReasoningBlock,
        ToolResultBlock,
    }
)


def _marker(data: bytes) -> str:
    """A private-use character that occurs nowhere in ``data``, neither as text nor escaped."""
    for code in range(0xE000, 0xF900):
        char = chr(code)
        if char.encode() not in data and not re.search(rb"\\u%x" % code, data, re.I):
            return char
    raise DecodeError("JSON text uses every private-use character; cannot read it")


def mark(data: bytes) -> tuple[bytes, str] | None:
    """``data`` as JSON msgspec reads, and the marker it used; None when there is nothing to
    turn. Inside strings, a lone surrogate escape becomes the marker and the escape's hex digits;
    outside them, ``NaN``/``Infinity``/``-Infinity`` becomes a string of the marker and
    ``n``/``i``/``-i``. The marker occurs nowhere else, so :func:`_restore` and :func:`unmark`
    undo exactly this."""
    if _EXACT_HINT.search(data) is None:
        return None
    marker = _marker(data)
    mark = marker.encode()
    found = False

    def escape(m: re.Match[bytes]) -> bytes:
        nonlocal found
        if m.group(2) is None:
            return m.group(0)
        found = True
        return mark + m.group(2).lower()

    def token(m: re.Match[bytes]) -> bytes:
        nonlocal found
        if m.group(1) is None:
            return _JSON_ESCAPE.sub(escape, m.group(0))
        found = True
        return b'"' + mark + _NONFINITE_JSON[m.group(1)].encode() + b'"'

    marked = _JSON_TOKEN.sub(token, data)
    return (marked, marker) if found else None


def _restore_str(text: str, marker: str, where: str, *, number: bool) -> Any:
    """A marked string back: a lone surrogate's marker to it, a whole marked number (allowed
    where ``number``) to the float."""
    if text[:1] == marker and text[1:] in _NONFINITE_VALUE:
        if not number:
            raise msgspec.ValidationError(f"Expected `str`, got `float` - at `{where}`")
        return _NONFINITE_VALUE[text[1:]]
    return re.sub(re.escape(marker) + "([0-9a-f]{4})", lambda m: chr(int(m.group(1), 16)), text)


def _restore(value: Any, marker: str, where: str = "$", *, typed: bool = False) -> Any:
    """A value decoded from marked text, as the original text meant it. ``typed``: ``value`` is a
    Struct field, where a string was asked for (a number there is an error)."""
    if isinstance(value, str):
        return _restore_str(value, marker, where, number=not typed) if marker in value else value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and marker in k:
                k = _restore_str(k, marker, f"key {k!r} in `{where}`", number=False)
            out[k] = _restore(v, marker, f"{where}.{k}")
        return out
    if isinstance(value, list):
        return [_restore(v, marker, f"{where}[{i}]", typed=typed) for i, v in enumerate(value)]
    if isinstance(value, msgspec.Raw):
        return msgspec.Raw(unmark(bytes(value), marker))
    if isinstance(value, msgspec.Struct):
        fields = {f: getattr(value, f) for f in value.__struct_fields__}
        changed = {f: _restore(v, marker, f"{where}.{f}", typed=True) for f, v in fields.items()}
        return msgspec.structs.replace(value, **{f: v for f, v in changed.items() if v is not fields[f]})
    return value


def unmark(data: bytes, marker: str) -> bytes:
    """Marked JSON text back to the text it was made from."""
    mark = marker.encode()
    if mark not in data:
        return data
    data = re.sub(
        b'"' + re.escape(mark) + rb'(n|i|-i)"', lambda m: _NONFINITE_MARK[m.group(1).decode()], data
    )
    return re.sub(re.escape(mark) + rb"([0-9a-f]{4})", rb"\\u\1", data)


class ExactDecoder(Generic[T]):
    """A msgspec JSON decoder for ``tp`` that also reads what msgspec refuses (lone surrogate
    escapes, ``NaN``/``Infinity``), through :func:`decode_json_exact`: the one way every JSON
    reader here (the codec's fast and per-block paths, transcripts, stored metadata) reads JSON."""

    __slots__ = ("_decoder",)

    def __init__(self, tp: Any) -> None:
        self._decoder: msgspec.json.Decoder[T] = msgspec.json.Decoder(tp)

    def decode(self, data: bytes) -> T:
        """``data`` as ``tp``; raises msgspec's errors, as a decoder does."""
        return decode_json_exact(self._decoder, data)


def _unmark_message(text: str, marker: str) -> str:
    """An error message about marked text, as about the text itself (msgspec quotes a marker as
    itself or, in a repr, as its ``\\uXXXX`` escape)."""
    text = unmark(text.encode(), marker).decode()
    return re.sub(re.escape(f"\\u{ord(marker):04x}") + "([0-9a-f]{4})", r"\\u\1", text)


def decode_json_exact(decoder: msgspec.json.Decoder[T], data: bytes) -> T:
    """``decoder.decode(data)``, also when ``data`` holds what msgspec refuses (lone surrogate
    escapes, ``NaN``/``Infinity``/``-Infinity``): such text is decoded with markers in their
    place, then every string is restored and every :class:`msgspec.Raw` is given back the exact
    text it was cut from, so a Raw is decoded by this module's functions as usual. A non-finite
    number is accepted only inside plain data (``Any``), not for a Struct's own field. Raises
    msgspec's errors, as the decoder does.
    """
    try:
        return decoder.decode(data)
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError:
        marked = mark(bytes(data))
        if marked is None:
            raise
        try:
            obj = decoder.decode(marked[0])
        except msgspec.ValidationError as exc:
            try:  # malformed text stays malformed, whatever the decoder met first
                _json_any.decode(marked[0])
            except msgspec.DecodeError:
                pass
            else:  # the message shows the text as it was written, not the markers
                raise msgspec.ValidationError(_unmark_message(str(exc), marked[1])) from None
        except msgspec.DecodeError:
            pass
        else:
            return cast(T, _restore(obj, marked[1]))
        raise
