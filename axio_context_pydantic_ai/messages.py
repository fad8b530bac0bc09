"""pydantic-ai messages <-> our messages.

Each pydantic-ai message becomes one of our messages holding, in its metadata under
:data:`JSON_KEY`, the message's JSON as pydantic-ai's own ``ModelMessagesTypeAdapter`` writes it:
reading gives back what pydantic-ai loads from that JSON, so every field (timestamps, usage,
model and provider fields, thinking signatures, tool call args whether dict or string, tool
returns of any value with outcome and retry) survives as pydantic-ai defines it. Beside it the
message holds native blocks (text, images as bytes, reasoning, tool calls and results, the other
parts as provider blocks), built from that same JSON, so ``show``, search, token estimates and
compaction work on these sessions. Native blocks become pydantic-ai messages again only where no
JSON is stored (a compaction summary) or a compaction step changed the message (:func:`rebuilt`).

A message's JSON from a newer pydantic-ai, with parts this one does not know, is stored whole
(its known parts as native blocks, the rest as provider blocks) and given back whole by
:func:`~axio_context_pydantic_ai.history.load_messages_json`; :func:`model_message` refuses it
with :class:`UnknownPartError` rather than drop what it cannot read.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import msgspec
from pydantic import ValidationError
from pydantic_ai import messages as pm

from axio_context.blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from axio_context.errors import DecodeError
from axio_context.messages import Message, Role, input_text, provider_text

__all__ = [
    "JSON_KEY",
    "PROVIDER",
    "MessageJSONError",
    "UnknownPartError",
    "blocks_of",
    "dump_message",
    "model_message",
    "native_message",
    "native_of_json",
    "rebuilt",
    "tool_names",
]

#: The metadata key holding a message's pydantic-ai JSON (text).
JSON_KEY: Final = "pydantic_ai"
#: ``ProviderBlock.provider`` of the parts with no native block.
PROVIDER: Final = "pydantic-ai"

_ADAPTER: Final = pm.ModelMessagesTypeAdapter
_json_decode: Final = msgspec.json.Decoder()


class MessageJSONError(DecodeError):
    """Data that is not a pydantic-ai message's JSON (not an object, no request/response kind)."""


class UnknownPartError(DecodeError):
    """A stored message this pydantic-ai cannot load (parts from a newer pydantic-ai)."""


def dump_message(message: pm.ModelMessage) -> str:
    """One message's JSON, as ``ModelMessagesTypeAdapter`` writes it inside a list."""
    return _ADAPTER.dump_json([message])[1:-1].decode()


def _load(text: str) -> pm.ModelMessage:
    return _ADAPTER.validate_json(f"[{text}]")[0]


def native_message(message: pm.ModelMessage, *, entry_id: str | None = None) -> Message:
    """Our message for a pydantic-ai one: its JSON in the metadata, native blocks beside it."""
    text = dump_message(message)
    return native_of_json(_json_decode.decode(text), text, entry_id=entry_id)


def native_of_json(data: Any, text: str, *, entry_id: str | None = None) -> Message:
    """Our message for a message's JSON (``data`` decoded from ``text``), known parts or not."""
    role, blocks = blocks_of(data)
    return Message(
        role=role, content=blocks, id=entry_id, timestamp=_timestamp_of(data), metadata={JSON_KEY: text}
    )


def model_message(message: Message, *, position: int | None = None) -> pm.ModelMessage:
    """The pydantic-ai message stored in ``message``; :func:`rebuilt` from its blocks when it
    holds no JSON. :class:`UnknownPartError` for a JSON this pydantic-ai cannot load."""
    text = (message.metadata or {}).get(JSON_KEY)
    if not isinstance(text, str):
        return rebuilt(message)
    try:
        return _load(text)
    except ValidationError as exc:
        where = "a message" if position is None else f"message {position}"
        kinds = sorted(_unknown_kinds(text))
        what = f"parts this pydantic-ai does not know ({', '.join(kinds)})" if kinds else "fields it refuses"
        raise UnknownPartError(
            f"{where} holds {what}: {exc.errors()[0]['msg'] if exc.errors() else exc}; "
            "load_messages_json gives it back whole for a newer pydantic-ai"
        ) from None


def _unknown_kinds(text: str) -> set[str]:
    known = {
        part.__dataclass_fields__["part_kind"].default
        for part in (*_union_members(pm.ModelRequestPart), *_union_members(pm.ModelResponsePart))
        if hasattr(part, "__dataclass_fields__") and "part_kind" in part.__dataclass_fields__
    }
    try:
        parts = _json_decode.decode(text).get("parts", [])
    except (msgspec.DecodeError, AttributeError):
        return set()
    return {str(p.get("part_kind")) for p in parts if isinstance(p, dict)} - {str(k) for k in known}


def _union_members(alias: Any) -> tuple[Any, ...]:
    inner = getattr(alias, "__value__", alias)
    origin = getattr(inner, "__origin__", None)
    if origin is not None and getattr(inner, "__metadata__", None) is not None:
        inner = inner.__origin__
    return tuple(getattr(inner, "__args__", ()))


def _timestamp_of(data: Mapping[str, Any]) -> datetime | None:
    stamps = [data.get("timestamp")]
    parts = data.get("parts")
    if isinstance(parts, list):
        stamps += [p.get("timestamp") for p in parts if isinstance(p, dict)]
    for stamp in stamps:
        if isinstance(stamp, str):
            try:
                return datetime.fromisoformat(stamp)
            except ValueError:
                continue
    return None


def blocks_of(data: Any) -> tuple[Role, list[ContentBlock]]:
    """The role and native blocks of a message's JSON (decoded): what people, search and
    budgets see. Parts with no native block, known or from a newer pydantic-ai, are provider
    blocks holding the part's JSON."""
    if not isinstance(data, dict) or data.get("kind") not in ("request", "response"):
        got = type(data).__name__ if not isinstance(data, dict) else f"kind {data.get('kind')!r}"
        raise MessageJSONError(f"not a pydantic-ai message (a request or response object): got {got}")
    parts = data.get("parts")
    if not isinstance(parts, list):
        raise MessageJSONError(f"a pydantic-ai {data['kind']} needs a list of parts")
    if data["kind"] == "response":
        role: Role = "assistant"
    elif parts and all(isinstance(p, dict) and p.get("part_kind") == "system-prompt" for p in parts):
        role = "system"
    else:
        role = "user"
    blocks: list[ContentBlock] = []
    for part in parts:
        blocks.extend(_blocks_of_part(part))
    return role, blocks


def _text(value: Any) -> str:
    return value if isinstance(value, str) else input_text(value)


def _blocks_of_part(part: Any) -> list[ContentBlock]:
    if not isinstance(part, dict):
        return [ProviderBlock(provider=PROVIDER, kind="unknown", data={"value": part})]
    kind = part.get("part_kind")
    content = part.get("content")
    if kind in ("system-prompt", "text") and isinstance(content, str):
        return [TextBlock(text=content, provider=part.get("provider_name") or "")]
    if kind == "user-prompt":
        items = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        return [_user_item(item) for item in items]
    if kind == "thinking" and isinstance(content, str):
        return [
            ReasoningBlock(
                text=content,
                signature=part.get("signature") or "",
                id=part.get("id") or "",
                provider=part.get("provider_name") or "",
            )
        ]
    if kind == "tool-call" and isinstance(part.get("tool_call_id"), str):
        return [ToolUseBlock(id=part["tool_call_id"], name=str(part.get("tool_name")), input=_args(part))]
    if kind == "tool-return" and isinstance(part.get("tool_call_id"), str):
        failed = part.get("outcome", "success") != "success"
        return [ToolResultBlock(tool_use_id=part["tool_call_id"], content=_text(content), is_error=failed)]
    if kind == "retry-prompt" and isinstance(part.get("tool_call_id"), str) and part.get("tool_name"):
        return [ToolResultBlock(tool_use_id=part["tool_call_id"], content=_text(content), is_error=True)]
    if kind in ("retry-prompt", "retry-feedback"):
        return [TextBlock(text=_text(content))]
    return [ProviderBlock(provider=PROVIDER, kind=str(kind or "unknown"), data=part)]


def _args(part: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as a mapping, for the native block (the JSON keeps them as given)."""
    args = part.get("args")
    if isinstance(args, dict):
        return args
    if args is None or args == "":
        return {}
    if isinstance(args, str):
        try:
            decoded = _json_decode.decode(args)
        except msgspec.DecodeError:
            decoded = None
        if isinstance(decoded, dict):
            return decoded
    return {"arguments": args}


_MEDIA: Final[dict[str, type[ImageBlock | AudioBlock | VideoBlock]]] = {
    "image/": ImageBlock,
    "audio/": AudioBlock,
    "video/": VideoBlock,
}


def _user_item(item: Any) -> ContentBlock:
    if isinstance(item, str):
        return TextBlock(text=item)
    if isinstance(item, dict) and item.get("kind") == "binary" and isinstance(item.get("data"), str):
        media_type = str(item.get("media_type") or "")
        for prefix, block in _MEDIA.items():
            if media_type.startswith(prefix):
                encoded = item["data"]
                # pydantic writes bytes as URL-safe base64; accept the standard alphabet too.
                alt = b"-_" if "-" in encoded or "_" in encoded else None
                try:
                    return block(media_type=media_type, data=base64.b64decode(encoded, alt, validate=True))
                except (binascii.Error, ValueError):
                    break
        # A document's bytes stay in the JSON only: the block says what it is.
        meta = {k: v for k, v in item.items() if k != "data"}
        return ProviderBlock(
            provider=PROVIDER, kind="binary", data={**meta, "size": len(item["data"]) * 3 // 4}
        )
    if isinstance(item, dict):
        return ProviderBlock(provider=PROVIDER, kind=str(item.get("kind") or "user-content"), data=item)
    return ProviderBlock(provider=PROVIDER, kind="user-content", data={"value": item})


# -- native blocks back to pydantic-ai (views a compaction step made) ------------------------


def rebuilt(message: Message, tool_names: Mapping[str, str] | None = None) -> pm.ModelMessage:
    """A pydantic-ai message from native blocks: for a message with no stored JSON (a compaction
    summary) or one a compaction step changed. Provider blocks holding a part's JSON become that
    part again; ``tool_names`` names the tools of tool results (by call id)."""
    names = tool_names or {}
    if message.role == "assistant":
        response: list[pm.ModelResponsePart] = []
        for block in message.content:
            response.extend(_response_parts(block))
        return pm.ModelResponse(parts=response, timestamp=message.timestamp or datetime.now(UTC))
    request: list[pm.ModelRequestPart] = []
    media: list[pm.UserContent] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            request.append(
                pm.SystemPromptPart(block.text) if message.role == "system" else pm.UserPromptPart(block.text)
            )
        elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
            media.append(pm.BinaryContent(data=block.data, media_type=block.media_type))
        elif isinstance(block, ToolResultBlock):
            content = (
                block.content
                if isinstance(block.content, str)
                else "\n".join(b.text for b in block.content if isinstance(b, TextBlock))
            )
            request.append(
                pm.ToolReturnPart(
                    tool_name=names.get(block.tool_use_id, ""),
                    content=content,
                    tool_call_id=block.tool_use_id,
                    outcome="failed" if block.is_error else "success",
                )
            )
        elif isinstance(block, ProviderBlock):
            part = _part_from_json("request", block.data)
            if part is not None:
                request.append(part)
            else:
                item = _user_content(block.data)
                if item is not None:
                    media.append(item)
                elif text := provider_text(block.data):
                    request.append(pm.UserPromptPart(text))
    if media:
        request.append(pm.UserPromptPart(media))
    return pm.ModelRequest(parts=request)


def _response_parts(block: ContentBlock) -> list[pm.ModelResponsePart]:
    if isinstance(block, TextBlock):
        return [pm.TextPart(block.text, provider_name=block.provider or None)]
    if isinstance(block, ReasoningBlock):
        return [
            pm.ThinkingPart(
                block.text,
                id=block.id or None,
                signature=block.signature or None,
                provider_name=block.provider or None,
            )
        ]
    if isinstance(block, ToolUseBlock):
        return [pm.ToolCallPart(block.name, dict(block.input), block.id)]
    if isinstance(block, ProviderBlock):
        part = _part_from_json("response", block.data)
        if part is not None:
            return [part]
        text = provider_text(block.data)
        return [pm.TextPart(text)] if text else []
    return []


def _part_from_json(kind: str, data: Mapping[str, Any]) -> Any:
    """The part a provider block's data is the JSON of, or None."""
    if "part_kind" not in data:
        return None
    try:
        return _ADAPTER.validate_python([{"kind": kind, "parts": [dict(data)]}])[0].parts[0]
    except ValidationError:
        return None


def _user_content(data: Mapping[str, Any]) -> pm.UserContent | None:
    if "kind" not in data or "url" not in data:
        return None
    try:
        part = _ADAPTER.validate_python(
            [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": [dict(data)]}]}]
        )
    except ValidationError:
        return None
    first = part[0].parts[0]
    if isinstance(first, pm.UserPromptPart) and isinstance(first.content, list) and first.content:
        item: pm.UserContent = first.content[0]
        return item
    return None


def tool_names(messages: Sequence[pm.ModelMessage]) -> dict[str, str]:
    """Tool names by call id, from the tool calls in ``messages``."""
    return {
        part.tool_call_id: part.tool_name
        for message in messages
        if isinstance(message, pm.ModelResponse)
        for part in message.parts
        if isinstance(part, pm.ToolCallPart)
    }
