"""Message: one turn of a conversation, and the session summary type listings return."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias

import msgspec

from .blocks import (
    ContentBlock,
    ProviderBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    from_dict,
    to_dict,
)
from .errors import DecodeError

__all__ = [
    "PREVIEW_CHARS",
    "SESSION_INFO_FIELDS",
    "SURROGATE",
    "Message",
    "Role",
    "SessionInfo",
    "input_text",
    "preview_for",
    "preview_of",
    "provider_text",
    "replace_lone_surrogates",
    "searchable_text",
    "session_info_of",
    "text_columns",
]

Role: TypeAlias = Literal["user", "assistant", "system"]

#: Length of a session preview, as in axio.
PREVIEW_CHARS = 80


class Message(msgspec.Struct, omit_defaults=True):
    """One message: a role and its content blocks (axio's ``Message``, as a msgspec Struct).

    ``id``, ``timestamp`` and ``metadata`` are optional additions a framework bridge needs (its
    own message id, when the message was made, provider fields with no block of their own). Unset
    they are left out of every encoding, so such a message is stored, exported and shaped as
    axio's. Every store gives them back; an aware ``timestamp`` comes back as the same instant in
    UTC (MessagePack's timestamp), a naive one as it was.
    """

    role: Role
    content: list[ContentBlock] = msgspec.field(default_factory=list)
    id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """axio's dict shape: ``{"role": ..., "content": [block dicts]}``, plus ``id``,
        ``timestamp`` (ISO 8601 text) and ``metadata`` when they are set."""
        out: dict[str, Any] = {"role": self.role, "content": [to_dict(b) for b in self.content]}
        if self.id is not None:
            out["id"] = self.id
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp.isoformat()
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out

    @property
    def has_extras(self) -> bool:
        """Whether ``id``, ``timestamp`` or ``metadata`` is set."""
        return self.id is not None or self.timestamp is not None or self.metadata is not None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Inverse of :meth:`to_dict`; validates the role and every block."""
        if not isinstance(data, dict):
            raise DecodeError(f"a message must be a mapping, got {type(data).__name__}")
        role = data.get("role")
        if role not in ("user", "assistant", "system"):
            raise DecodeError(f"invalid message role {role!r}: expected 'user', 'assistant' or 'system'")
        raw = data.get("content", [])
        if not isinstance(raw, list):
            raise DecodeError(f"message content must be a list, got {type(raw).__name__}")
        content: list[ContentBlock] = []
        for i, item in enumerate(raw):
            try:
                content.append(from_dict(item))
            except DecodeError as exc:
                raise DecodeError(f"content[{i}]: {exc}") from None
        return cls(role=role, content=content, **_extras_from_dict(data))

    @property
    def text(self) -> str:
        """The message's text blocks joined by newlines (tool calls and media left out)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


def _extras_from_dict(data: dict[str, Any]) -> dict[str, Any]:
    """The optional ``id``/``timestamp``/``metadata`` of a message dict, checked."""
    out: dict[str, Any] = {}
    mid = data.get("id")
    if mid is not None:
        if not isinstance(mid, str):
            raise DecodeError(f"message id must be a string, got {type(mid).__name__}")
        out["id"] = mid
    ts = data.get("timestamp")
    if ts is not None:
        if isinstance(ts, str):
            try:
                ts = datetime.fromisoformat(ts)
            except ValueError:
                raise DecodeError(f"message timestamp is not ISO 8601: {ts!r:.80}") from None
        if not isinstance(ts, datetime):
            raise DecodeError(f"message timestamp must be ISO 8601 or a datetime, not {type(ts).__name__}")
        out["timestamp"] = ts
    meta = data.get("metadata")
    if meta is not None:
        if not isinstance(meta, dict):
            raise DecodeError(f"message metadata must be a mapping, got {type(meta).__name__}")
        out["metadata"] = meta
    return out


class SessionInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """One session in a listing; the first six fields are axio's, the rest are additions."""

    session_id: str
    message_count: int
    preview: str
    created_at: str
    input_tokens: int = 0
    output_tokens: int = 0
    project: str | None = None
    updated_at: str = ""
    parent_id: str | None = None
    fork_position: int | None = None
    title: str | None = None


#: How many columns a listing row gives :func:`session_info_of` (SessionInfo's fields, in order).
SESSION_INFO_FIELDS: Final = len(SessionInfo.__struct_fields__)


def session_info_of(row: Sequence[Any]) -> SessionInfo:
    """A SessionInfo from a listing row whose first columns are its fields in order (passed by
    position: half the time of by name); columns past them are the backend's own."""
    return SessionInfo(*row[:SESSION_INFO_FIELDS])


def preview_of(history: list[Message], limit: int = PREVIEW_CHARS) -> str:
    """axio's preview: the first user message's first text, cut to ``limit`` chars with '...'."""
    for msg in history:
        if msg.role == "user":
            for block in msg.content:
                if isinstance(block, TextBlock):
                    text = block.text
                    return text[:limit] + ("..." if len(text) > limit else "")
            break
    return "(empty)"


_input_json: Final = msgspec.json.Encoder()


#: A surrogate code point: in a ``str`` always a lone one (tool output decoded with
#: ``surrogateescape``, file names), which UTF-8, and so SQLite and msgspec, cannot encode.
SURROGATE: Final = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD: for text derived from a message (its search
    text, its preview), which goes where only valid UTF-8 can; the message keeps its own."""
    return text if text.isascii() else SURROGATE.sub("\ufffd", text)


def preview_for(messages: Sequence[Message], offset: int = 0) -> tuple[int, str] | None:
    """axio's preview rule for a batch: (position, text) of the first user message, if any."""
    for i, msg in enumerate(messages):
        if msg.role == "user":
            for block in msg.content:
                if isinstance(block, TextBlock):
                    t = block.text
                    cut = t[:PREVIEW_CHARS] + ("..." if len(t) > PREVIEW_CHARS else "")
                    return offset + i, replace_lone_surrogates(cut)
            return offset + i, ""
    return None


def _input_text(value: Any) -> str:
    """A tool input as compact JSON text, for search; never raises, so every input has one.

    msgspec writes it; the standard library spells what msgspec cannot (lone surrogates in
    strings, huge integers); keys JSON has no spelling for (``None``, bools, tuples: the codec
    refuses them now, but rows stored before it did hold them) are written as their own JSON
    text first. The text of an input msgspec writes never changes: the keyword index removes a
    row by feeding it the text again.
    """
    try:
        return _input_json.encode(value).decode()
    except (ValueError, OverflowError):  # a lone surrogate (UnicodeEncodeError), a huge integer
        pass
    except (TypeError, msgspec.EncodeError):
        try:
            value = _str_keys(value)
            return _input_json.encode(value).decode()
        except Exception:  # the standard library's turn, with the keys written out if that worked
            pass
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except Exception:  # what not even str() renders stays out of the search text
        return ""


def input_text(value: Any) -> str:
    """A tool input (or provider data) as compact JSON text for people and models (summaries,
    size checks); never raises, whatever the codec stores.

    The search text (:func:`_input_text`) with lone surrogates as U+FFFD, so it encodes as
    UTF-8. An integer too long for ``str()`` (Python's 4,300-digit limit) is written as the
    string ``"<integer of about N digits>"``, the digits counted from its bit length.
    """
    try:
        text = _input_text(value)
    except Exception:  # an integer key over the limit, nesting too deep for msgspec
        text = ""
    if not text:  # an integer over the limit, or a lone surrogate and an odd key together
        try:
            text = json.dumps(
                _str_keys(_spell_huge_ints(value)), ensure_ascii=False, separators=(",", ":"), default=str
            )
        except Exception:  # nesting too deep to walk, a cycle: nothing to show
            text = ""
    return replace_lone_surrogates(text)


def _spell_huge_ints(value: Any) -> Any:
    """``value`` with each integer ``str()`` refuses written as a short string."""
    if isinstance(value, dict):
        return {
            _spell_huge_ints(k) if isinstance(k, int) else k: _spell_huge_ints(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_spell_huge_ints(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            str(value)
        except ValueError:
            return f"<integer of about {int_digits(value)} digits>"
    return value


def int_digits(value: int) -> int:
    """About how many decimal digits ``value`` has (its sign counted), from its bit length:
    never converts it, so it works past ``str()``'s digit limit."""
    return max(1, math.ceil(abs(value).bit_length() * _LOG10_2)) + (value < 0)


_LOG10_2: Final = math.log10(2)


def _str_keys(value: Any) -> Any:
    """``value`` with every dict key that is not a string or number replaced by its JSON text,
    and tuples as lists."""
    if isinstance(value, dict):
        return {_str_key(k): _str_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_str_keys(v) for v in value]
    return value


def _str_key(key: Any) -> Any:
    return key if isinstance(key, (str, int, float)) and not isinstance(key, bool) else _input_text(key)


def text_columns(message: Message) -> tuple[str, str]:
    """A message's plain text in two parts: ``body`` (what people and the model wrote) and
    ``tool`` (tool names, inputs and results), so search can weigh them differently. Lone
    surrogates become U+FFFD (:func:`replace_lone_surrogates`): indexes store only valid UTF-8."""
    body: list[str] = []
    tool: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            body.append(block.text)
        elif isinstance(block, ToolUseBlock):
            tool.append(block.name)
            tool.append(_input_text(block.input))
        elif isinstance(block, ToolResultBlock):
            if isinstance(block.content, str):
                tool.append(block.content)
            else:
                tool.extend(b.text for b in block.content if isinstance(b, TextBlock))
        elif isinstance(block, UnknownBlock):
            text = block.data.get("text")
            if isinstance(text, str):
                body.append(text)
        elif isinstance(block, ProviderBlock):
            text = provider_text(block.data)
            (tool if _TOOLISH.search(block.kind) else body).append(text)
    return (
        replace_lone_surrogates("\n".join(p for p in body if p)),
        replace_lone_surrogates("\n".join(p for p in tool if p)),
    )


def searchable_text(message: Message) -> str:
    """The plain text search indexes, body then tool text (see :func:`text_columns`)."""
    return "\n".join(p for p in text_columns(message) if p)


#: A provider item whose kind matches this is tool traffic (a call, its output): ``tool`` column.
_TOOLISH: Final = re.compile(r"call|output|tool|computer|shell|patch", re.IGNORECASE)
#: Keys whose values are identifiers, states or formats, never text anyone would search for.
_OPAQUE_KEYS: Final = frozenset(
    {
        "type",
        "id",
        "status",
        "role",
        "encrypted_content",
        "signature",
        "format",
        "detail",
        "media_type",
        "mime_type",
        "mimeType",
        "file_data",
        "fileData",
        "data",
        "bytes",
    }
)
#: A string this long with no whitespace is data (base64, a ciphertext, a token), not text.
OPAQUE_MIN: Final = 200


def is_opaque(key: object, value: str) -> bool:
    """Whether ``value`` (under ``key``) in provider data is data rather than text: an id, a data
    URL, base64 or ciphertext. Search and token estimates leave such values out."""
    if isinstance(key, str) and (key in _OPAQUE_KEYS or key.endswith(("_id", "_ids", "Id"))):
        return True
    if value.startswith("data:"):
        return True
    return len(value) >= OPAQUE_MIN and not any(ch.isspace() for ch in value[:OPAQUE_MIN])


def provider_text(data: Any) -> str:
    """The text in a provider item's data: every string value that is not opaque
    (:func:`is_opaque`), newline-joined in document order; never raises. What search indexes
    and token estimates count for a :class:`~axio_context.blocks.ProviderBlock`."""
    out: list[str] = []
    stack: list[tuple[object, Any]] = [(None, data)]
    seen = 0
    while stack:
        key, value = stack.pop()
        seen += 1
        if seen > 100_000:  # a pathological item: what was found so far is enough
            break
        if isinstance(value, str):
            if value and not is_opaque(key, value):
                out.append(value)
        elif isinstance(value, dict):
            # A dict under an opaque key (``data`` aside, which often wraps the item) holds no text.
            items = [(k, v) for k, v in value.items() if k == "data" or k not in _OPAQUE_KEYS]
            stack.extend(reversed(items))
        elif isinstance(value, list | tuple):
            stack.extend(reversed([(key, v) for v in value]))
    return replace_lone_surrogates("\n".join(out))
