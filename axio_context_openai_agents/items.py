"""openai-agents items <-> our messages: each item is one message holding native blocks (so
``show``, search, token estimates and compaction work) and, in its metadata, the item's own JSON,
which is what reading gives back, so the round trip is exact.

The JSON is msgspec's (UTF-8, floats in their shortest exact form), read back with msgspec:
ints stay ints (big ones too), floats floats, and every key and value the item held comes back,
whatever its type (messages of any role, function calls whose ``arguments`` are not JSON,
reasoning with encrypted content, images, files, hosted tools). An item whose msgspec JSON
does not read back equal to it (NaN and infinities, which msgspec writes as ``null``; lone
surrogates; tuples; non-string keys) is written by the standard library's ``json`` instead, which
also refuses what JSON cannot hold (a datetime) as before; ``json`` also reads what msgspec
refuses (``NaN``), so items stored by earlier versions (``json.dumps``) read back the same.
Native blocks are a view for people, search and budgets; they are never turned back into items,
except for a message no item was stored with (a compaction summary), given back as an easy
input message ``{"role": ..., "content": text}``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from axio_context.blocks import (
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
)
from axio_context.codec import check_message
from axio_context.errors import DecodeError
from axio_context.messages import Message, Role

__all__ = [
    "ITEM_KEY",
    "PROVIDER",
    "ItemError",
    "item_json",
    "item_of",
    "item_of_value",
    "items_of_values",
    "loads",
    "message_of",
    "messages_of",
]

#: The metadata key holding an item's JSON.
ITEM_KEY: Final = "openai_agents_item"
#: ``ProviderBlock.provider`` of the parts and items with no native block.
PROVIDER: Final = "openai-agents"

#: Item types whose role in our transcript is the user's side (what a tool gave back).
_OUTPUT_TYPES: Final = frozenset(
    {
        "function_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "custom_tool_call_output",
        "mcp_approval_response",
        "tool_search_output",
    }
)
_ROLES: Final[dict[str, Role]] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})


_encode: Final = msgspec.json.Encoder().encode
_decode: Final = msgspec.json.Decoder().decode


def item_json(item: Any) -> str:
    """``item`` as JSON text that reads back equal to it (see the module's docstring); raises
    what ``json.dumps`` raises for what JSON cannot hold."""
    try:
        data = _encode(item)
        if _decode(data) == item:  # JSON values only, no NaN: what msgspec writes exactly
            return data.decode()
    except (TypeError, ValueError, msgspec.EncodeError, msgspec.DecodeError):
        pass  # a lone surrogate, a type JSON lacks: json escapes the one, names the other
    # NaN and infinities, tuples, non-string keys, datetimes: as json writes (or refuses) them
    return json.dumps(item, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """JSON text as Python values: msgspec, or ``json`` for what it alone reads (``NaN``)."""
    try:
        return _decode(text)
    except msgspec.DecodeError:
        return json.loads(text)


class ItemError(DecodeError):
    """An item the session cannot store: not a mapping, no ``type`` or ``role``, not JSON."""


def _role_of(item: Mapping[str, Any], kind: str | None) -> Role:
    role = item.get("role")
    if isinstance(role, str) and role in _ROLES:
        return _ROLES[role]
    return "user" if kind in _OUTPUT_TYPES else "assistant"


def _parts(content: Any) -> list[ContentBlock]:
    """Native blocks of a message's content: text parts as text, the rest as provider blocks."""
    if isinstance(content, str):
        return [TextBlock(text=content)]
    out: list[ContentBlock] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                kind = part.get("type")
                text = part.get("text") if kind in _TEXT_PARTS else part.get("refusal")
                if isinstance(text, str) and kind in (*_TEXT_PARTS, "refusal"):
                    out.append(TextBlock(text=text))
                    continue
                image = _inline_image(part.get("image_url")) if kind == "input_image" else None
                if image is not None:  # an image block: shown as one, counted as one, stored once
                    out.append(image)
                    continue
                out.append(ProviderBlock(provider=PROVIDER, kind=str(kind or "part"), data=part))
            elif isinstance(part, str):
                out.append(TextBlock(text=part))
    return out


def _inline_image(url: Any) -> ImageBlock | None:
    """The image of a ``data:<type>;base64,...`` URL, None for anything else."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    head, sep, data = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return ImageBlock(media_type=head[5:-7] or "application/octet-stream", data=raw)


def is_envelope(item: Mapping[str, Any]) -> bool:
    """Whether ``item`` is an ``EncryptedSession`` envelope (``{"__enc__": 1, "v", "kid",
    "payload"}``): stored whole, as an opaque block (its text is ciphertext, nothing to show)."""
    return "__enc__" in item and "payload" in item


def _blocks(item: dict[str, Any], kind: str | None) -> list[ContentBlock]:
    if kind is None and is_envelope(item):
        return [ProviderBlock(provider=PROVIDER, kind="encrypted", data={})]
    if kind in (None, "message"):
        return _parts(item.get("content"))
    if kind == "function_call":
        args = item.get("arguments")
        try:
            parsed = loads(args) if isinstance(args, str) else None
        except ValueError:
            parsed = None
        tool_input = parsed if isinstance(parsed, dict) else {"arguments": args}
        return [
            ToolUseBlock(id=str(item.get("call_id", "")), name=str(item.get("name", "")), input=tool_input)
        ]
    if kind == "function_call_output":
        output = item.get("output")
        extra: list[ContentBlock] = []
        content: str | list[ToolResultContent]
        if isinstance(output, str):
            content = output
        else:
            parts = _parts(output)
            content = [b for b in parts if isinstance(b, TextBlock | ImageBlock)]
            extra = [b for b in parts if not isinstance(b, TextBlock | ImageBlock)]
        return [ToolResultBlock(tool_use_id=str(item.get("call_id", "")), content=content), *extra]
    if kind == "reasoning":
        summary = item.get("summary")
        texts = [p.get("text") for p in summary if isinstance(p, dict)] if isinstance(summary, list) else []
        text = "\n".join(t for t in texts if isinstance(t, str))
        return [ReasoningBlock(text=text, id=str(item.get("id") or ""), provider="openai")]
    return [ProviderBlock(provider=PROVIDER, kind=kind, data=item)]


def message_of(item: Any, index: int = 0, *, checked: bool = True, now: datetime | None = None) -> Message:
    """The message that stores ``item`` (:class:`ItemError` naming ``items[index]`` when it
    cannot be stored). ``checked=False`` skips the codec's check of the native blocks (a store's
    append makes it anyway, refusing the batch): for a caller that retries with it on. ``now``:
    its timestamp (a batch's items share one, read once; None: the current time)."""
    if not isinstance(item, dict):
        raise ItemError(f"items[{index}]: an item must be a dict, got {type(item).__name__}")
    kind = item.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ItemError(f"items[{index}]: `type` must be a string, got {type(kind).__name__}")
    if kind is None and not isinstance(item.get("role"), str) and not is_envelope(item):
        raise ItemError(f"items[{index}]: an item needs a `type` (or a `role`, for a message)")
    try:
        text = item_json(item)
    except (TypeError, ValueError) as exc:
        raise ItemError(f"items[{index}]: not JSON-serialisable ({exc})") from None
    except RecursionError:
        raise ItemError(
            f"items[{index}]: nested too deeply to store (lists and objects within each other)"
        ) from None
    item_id = item.get("id")
    message = Message(
        role=_role_of(item, kind),
        content=_blocks(item, kind),
        id=item_id if isinstance(item_id, str) else None,
        timestamp=datetime.now(UTC) if now is None else now,
        metadata={ITEM_KEY: text},
    )
    if not checked:
        return message
    try:
        check_message(message)
    except DecodeError:  # native blocks the codec refuses (a deep tool input): the item whole
        message = msgspec.structs.replace(
            message, content=[ProviderBlock(provider=PROVIDER, kind=kind or "message", data={})]
        )
    return message


def messages_of(items: list[Any], *, checked: bool = True) -> list[Message]:
    """The messages storing ``items`` (see :func:`message_of`), with one timestamp: the time is
    read once for the batch that one transaction writes, not once per item."""
    now = datetime.now(UTC)
    return [message_of(item, i, checked=checked, now=now) for i, item in enumerate(items)]


def item_of(message: Message) -> dict[str, Any]:
    """The item ``message`` stores; a message stored without one (a compaction summary) as an
    easy input message of its text."""
    text = message.metadata.get(ITEM_KEY) if message.metadata else None
    return item_of_value(message if text is None else text, message)


def item_of_value(value: Any, message: Message | None = None) -> dict[str, Any]:
    """The item of a stored ``ITEM_KEY`` value (JSON text), or of ``value`` itself when it is a
    message stored without one (see :func:`item_of`)."""
    if isinstance(value, str):
        item = loads(value)
        if isinstance(item, dict):
            return item
    if message is None:
        message = value if isinstance(value, Message) else None
    if message is None:
        raise ItemError(f"a stored item is not a JSON object: {str(value)[:80]!r}")
    return {"role": message.role, "content": message.text}


def items_of_values(values: list[Any]) -> list[dict[str, Any]]:
    """The items of stored ``ITEM_KEY`` values (and messages stored without one), in order: the
    values decoded by msgspec in one pass, one by one only when some value needs more."""
    try:
        items = [_decode(v) for v in values]
    except (msgspec.DecodeError, TypeError):  # a message, or JSON only ``json`` reads
        return [item_of_value(v) for v in values]
    if all(type(i) is dict for i in items):
        return items
    return [item_of_value(v) for v in values]
