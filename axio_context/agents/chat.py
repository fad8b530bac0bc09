"""ravi's chat messages as our :class:`~axio_context.Message`, converted on the way in.

ravi's providers take a ``ChatMessage`` (a role and a string content, OpenAI's chat shape) or its
dict form; ours store :class:`Message` (a role and content blocks). :func:`as_message` turns
either into a Message, so ravi code that appends its own messages runs unchanged:

- a string ``content`` becomes one text block; a list is read as block dicts (OpenAI's
  ``{"type": "text", "text": ...}`` parts are ours too);
- an assistant's ``tool_calls`` (``{"id", "function": {"name", "arguments"}}``) become
  ``tool_use`` blocks, their JSON arguments parsed;
- a ``tool`` message (``tool_call_id`` and the result as content) becomes a user message holding
  one ``tool_result`` block, as axio and Anthropic carry results; ``developer`` is ``system``.

What comes back out is always a Message: its ``.text`` is the string ravi's ``content`` was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

from ..blocks import ContentBlock, TextBlock, ToolResultBlock, ToolUseBlock, from_dict
from ..errors import DecodeError
from ..messages import Message, Role

__all__ = ["ChatMessageLike", "as_message"]


@runtime_checkable
class _HasRoleAndContent(Protocol):
    @property
    def role(self) -> Any: ...
    @property
    def content(self) -> Any: ...


#: What a provider's append takes besides a Message: ravi's ``ChatMessage`` (anything with a
#: ``role`` and a ``content``) or its dict form.
ChatMessageLike: TypeAlias = _HasRoleAndContent | Mapping[str, Any]

_ROLES: Final[dict[str, Role]] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}
_FIELDS: Final = ("role", "content", "tool_calls", "tool_call_id")


def as_message(value: object, where: str = "message") -> Message:
    """``value`` as a :class:`Message`: a Message as it is, a ravi/OpenAI chat message (an object
    with ``role`` and ``content``, or its dict form) converted; anything else a TypeError."""
    if isinstance(value, Message):
        return value
    if isinstance(value, Mapping):
        data: Mapping[str, Any] = value
    elif hasattr(value, "role") and hasattr(value, "content"):
        data = {name: getattr(value, name) for name in _FIELDS if hasattr(value, name)}
    else:
        raise TypeError(
            f"{where} must be a Message or a chat message (role and content), got {type(value).__name__}"
        )
    try:
        return _from_chat(data)
    except (DecodeError, TypeError, ValueError, KeyError) as exc:
        raise TypeError(f"{where} is not a chat message we can read: {exc}") from None


def _from_chat(data: Mapping[str, Any]) -> Message:
    role = getattr(data.get("role"), "value", data.get("role"))  # an enum's value, else the text
    content = data.get("content")
    if role == "tool":
        call_id = data.get("tool_call_id")
        if not isinstance(call_id, str):
            raise ValueError("a tool message needs its tool_call_id")
        result = content if isinstance(content, str) else _blocks(content)
        return Message(role="user", content=[ToolResultBlock(tool_use_id=call_id, content=result)])
    if role not in _ROLES:
        raise ValueError(f"role {role!r} is none of user, assistant, system, developer, tool")
    blocks: list[ContentBlock] = [TextBlock(text=content)] if isinstance(content, str) else _blocks(content)
    for call in data.get("tool_calls") or ():
        blocks.append(_tool_use(call))
    return Message(role=_ROLES[role], content=blocks)


def _blocks(content: object) -> list[Any]:
    if content is None:
        return []
    if not isinstance(content, list):
        raise ValueError(f"content must be a string or a list of parts, got {type(content).__name__}")
    return [from_dict(part if isinstance(part, dict) else _dict_of(part)) for part in content]


def _tool_use(call: object) -> ToolUseBlock:
    data = call if isinstance(call, Mapping) else _dict_of(call)
    function = data.get("function", data)
    if not isinstance(function, Mapping):
        function = _dict_of(function)
    arguments = function.get("arguments", function.get("input", {}))
    parsed = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments
    if not isinstance(parsed, dict):
        raise ValueError(f"tool call {data.get('id')!r} has arguments that are not a JSON object")
    return ToolUseBlock(id=str(data["id"]), name=str(function["name"]), input=parsed)


def _dict_of(value: object) -> dict[str, Any]:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        out = dump()
        if isinstance(out, dict):
            return out
    return dict(vars(value))
