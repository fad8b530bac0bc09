"""Tool-call pairing: the one rule every view must keep, and the one helper that enforces it.

Providers reject a request in which a ``tool_use`` has no ``tool_result`` in the next message, or
a ``tool_result`` answers a call the message before it did not make. Every view this package
builds (strategies, pipelines, ``compact_context``, ``AutoCompactStore``) goes through
:func:`repair_tool_pairs`, and every split point comes from :func:`safe_split`, so a cut never
separates a call from its result in either direction, parallel calls included.

The canonical shape is axio's: an assistant message holding one or more ``tool_use`` blocks,
followed by one user message holding their ``tool_result`` blocks. The only ``tool_use`` allowed
without a result is in the final assistant message of a view (the call is still running).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ..blocks import ContentBlock, ToolResultBlock, ToolUseBlock, UnknownBlock
from ..messages import Message

__all__ = [
    "INTERRUPTED_RESULT_TEXT",
    "is_synthetic_result",
    "last_group_start",
    "repair_tool_pairs",
    "result_id",
    "safe_split",
    "tool_pair_problems",
]

#: The text of a synthetic result standing in for a call whose result never arrived.
INTERRUPTED_RESULT_TEXT: Final = (
    "[synthetic tool_result: this tool call was interrupted and no result was recorded]"
)


def is_synthetic_result(block: object) -> bool:
    """True for a result :func:`repair_tool_pairs` made up for an interrupted call."""
    return isinstance(block, ToolResultBlock) and block.is_error and block.content == INTERRUPTED_RESULT_TEXT


def result_id(block: object) -> str | None:
    """The ``tool_use_id`` a block answers, None when it is no tool result. A result a newer
    version wrote (a block type inside it this version does not know) is kept whole as an
    :class:`UnknownBlock`; it still answers its call."""
    if isinstance(block, ToolResultBlock):
        return block.tool_use_id
    if isinstance(block, UnknownBlock) and block.data.get("type") == "tool_result":
        answered = block.data.get("tool_use_id")
        return answered if isinstance(answered, str) else None
    return None


def _result_ids(message: Message) -> list[str]:
    return [i for b in message.content if (i := result_id(b)) is not None]


def _uses(message: Message) -> list[ToolUseBlock]:
    if message.role != "assistant":
        return []
    return [b for b in message.content if isinstance(b, ToolUseBlock)]


def tool_pair_problems(messages: Sequence[Message]) -> list[str]:
    """Every breach of the pairing rule in ``messages``, described; empty when the view is valid."""
    problems: list[str] = []
    last = len(messages) - 1
    for i, msg in enumerate(messages):
        results = _result_ids(msg)
        if results:
            before = set() if i == 0 else {u.id for u in _uses(messages[i - 1])}
            seen: set[str] = set()
            for r in results:
                if msg.role != "user":
                    problems.append(f"message {i}: tool_result {r!r} in a {msg.role} message")
                elif r not in before:
                    problems.append(f"message {i}: tool_result {r!r} has no tool_use in the message before")
                elif r in seen:
                    problems.append(f"message {i}: duplicate tool_result {r!r}")
                seen.add(r)
        uses = _uses(msg)
        if uses and i != last:
            nxt = messages[i + 1]
            answered = set(_result_ids(nxt)) if nxt.role == "user" else set()
            problems.extend(
                f"message {i}: tool_use {u.id!r} has no tool_result in the next message"
                for u in uses
                if u.id not in answered
            )
    return problems


def _synthetic(uses: Sequence[ToolUseBlock]) -> list[ContentBlock]:
    return [ToolResultBlock(tool_use_id=u.id, content=INTERRUPTED_RESULT_TEXT, is_error=True) for u in uses]


def repair_tool_pairs(messages: Sequence[Message], *, drop_orphans: bool = True) -> list[Message]:
    """A copy of ``messages`` that keeps the pairing rule; the input and its messages are not changed.

    A call whose result never arrived (a crashed or cancelled turn) gets a synthetic result,
    marked ``is_error=True`` with :data:`INTERRUPTED_RESULT_TEXT`, in the message after it (a new
    user message when the next one is not a user message). With ``drop_orphans``, results that
    answer no call in the message before (left behind when a cut removed their call) are removed,
    and a message emptied that way is dropped. A final assistant message's calls are left alone.
    Messages that need no change are passed through as the same objects.
    """
    out: list[Message] = []
    pending: dict[str, ToolUseBlock] = {}
    for msg in messages:
        if pending and msg.role != "user":
            out.append(Message(role="user", content=_synthetic(list(pending.values()))))
            pending = {}
        if pending or drop_orphans:
            answered = _result_ids(msg)
            # The common case, checked cheaply: the results answer exactly the pending calls.
            if len(answered) != len(pending) or (pending and pending.keys() != set(answered)):
                repaired = _repair_message(msg, pending, drop_orphans)
                pending = {}
                if repaired is None:
                    continue
                msg = repaired
        out.append(msg)
        if msg.role == "assistant":
            pending = {b.id: b for b in msg.content if isinstance(b, ToolUseBlock)}
        else:
            pending = {}
    return out


def _repair_message(msg: Message, pending: dict[str, ToolUseBlock], drop_orphans: bool) -> Message | None:
    """``msg`` with synthetic results for unanswered ``pending`` calls (and orphans dropped);
    ``None`` when dropping orphans left nothing of it."""
    content: list[ContentBlock] = []
    answered: set[str] = set()
    insert_at = 0
    for block in msg.content:
        rid = result_id(block)
        if rid is not None:
            if rid in pending and rid not in answered:
                answered.add(rid)
            elif drop_orphans:
                continue
            content.append(block)
            insert_at = len(content)
        else:
            content.append(block)
    missing = [u for i, u in pending.items() if i not in answered]
    if missing:
        content[insert_at:insert_at] = _synthetic(missing)
    if not missing and len(content) == len(msg.content):
        return msg
    if not content and msg.content:
        return None  # every block was an orphan result
    return Message(role=msg.role, content=content)


def safe_split(messages: Sequence[Message], split: int, *, lower: int = 0) -> int:
    """The largest index ``<= split`` (and ``>= lower``) that separates no call from its result.

    ``messages[:index]`` and ``messages[index:]`` then never share a call/result pair, in either
    direction and whatever the layout. A call in the final message whose result has not arrived
    yet counts as answered at the end, so the split never lands after it.
    """
    n = len(messages)
    split = max(lower, min(split, n))
    if split <= lower:
        return lower
    # blocked[s] > 0 when some pair (use at u, result at r) has u < s <= r.
    delta = [0] * (n + 2)
    used_at: dict[str, int] = {}
    answered: set[str] = set()
    for i in range(lower, n):
        msg = messages[i]
        for rid in _result_ids(msg):
            u = used_at.get(rid)
            if u is not None and u < i:
                delta[u + 1] += 1
                delta[i + 1] -= 1
                answered.add(rid)
        for use in _uses(msg):
            used_at[use.id] = i
    if n and messages[-1].role == "assistant":
        for use in _uses(messages[-1]):
            if use.id not in answered:
                delta[n] += 1
                delta[n + 1] -= 1
    blocked = 0
    cover = [0] * (n + 1)
    for s in range(n + 1):
        blocked += delta[s]
        cover[s] = blocked
    while split > lower and cover[split] > 0:
        split -= 1
    return split


def last_group_start(messages: Sequence[Message], lower: int = 0) -> int:
    """Where the last message's exchange starts: its own index, or earlier when it holds results
    whose calls come before it. A cut at or before this index keeps the last message valid."""
    if not messages:
        return 0
    return safe_split(messages, len(messages) - 1, lower=min(lower, len(messages) - 1))
