"""The pure parts of :class:`~.advanced.AxioAdvancedSession`: which item starts a turn, tool
counts, the user turns as openai-agents gives them, openai-agents' usage as ours and back."""

from __future__ import annotations

import base64
import json
import re
import sys
import time
from array import array
from datetime import UTC, datetime
from typing import Any, Final, cast

import msgspec
from agents.extensions.memory.advanced_sqlite_session import AdvancedSQLiteSession

from axio_context.context import ContextStore
from axio_context.errors import SessionNotFoundError
from axio_context.messages import Message
from axio_context.turns_sql import Turn, TurnIndexCalls
from axio_context.usage_limits import RunUsage

from .items import item_of

#: Where the code before the turns table (``message_turns``, :mod:`axio_context.turns_sql`) kept
#: a session's turns: its metadata, ``[position, created at (ms)]`` packed (:func:`pack`). A
#: session opened with it is moved into the table once (:func:`unpack`), and the key dropped.
TURNS_KEY: Final = "openai_agents_turns"
#: The main session's metadata key: ``{branch name: {"session": id, "created_at": ...}}``.
BRANCHES_KEY: Final = "openai_agents_branches"
#: The main session's metadata key: every branch name ever used (a deleted one stays taken).
USED_KEY: Final = "openai_agents_branch_names"
MAIN: Final = "main"
_JSON: Final = msgspec.json.Encoder()
#: The current branch, resolved where the call runs (never a branch's name: those are not blank).
CURRENT: Final = ""

_TOOL_CALLS: Final = frozenset(
    {
        "tool_call",
        "function_call",
        "computer_call",
        "file_search_call",
        "web_search_call",
        "code_interpreter_call",
        "tool_search_call",
        "custom_tool_call",
        "mcp_call",
        "mcp_approval_request",
        "shell_call",
        "apply_patch_call",
    }
)


def classify(item: Any) -> str:
    return AdvancedSQLiteSession._classify_message_type(cast(Any, None), item)  # uses no state


def tool_name(item: Any) -> str | None:
    return AdvancedSQLiteSession._extract_tool_name(cast(Any, None), item)  # uses no state


def is_user(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") == "user"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")


def ms() -> int:
    return time.time_ns() // 1_000_000


def stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


async def size(store: ContextStore) -> int | None:
    """The session's length; None when it does not exist."""
    try:
        return int((await store.info()).message_count)  # type: ignore[attr-defined]
    except SessionNotFoundError:
        return None


def tool_usage(numbered: list[tuple[int, Any]]) -> list[tuple[str, int, int]]:
    """``(tool name, calls, turn)`` of numbered items, as openai-agents counts them."""
    counts: dict[tuple[int, str], int] = {}
    searched: set[tuple[int, str]] = set()
    outputs: list[tuple[int, str]] = []
    for turn, item in numbered:
        kind, name = classify(item), tool_name(item)
        if kind in _TOOL_CALLS:
            name = name or (kind if kind in ("shell_call", "apply_patch_call") else None)
            if name is not None:
                counts[turn, name] = counts.get((turn, name), 0) + 1
            if kind == "tool_search_call" and name is not None:
                searched.add((turn, name))
        elif kind == "tool_search_output" and name is not None:
            outputs.append((turn, name))
    for key in outputs:
        if key not in searched:
            counts[key] = counts.get(key, 0) + 1
    return [(name, n, turn) for (turn, name), n in sorted(counts.items())]


def content_json(item: Any) -> str:
    """A user item's content as the JSON text its turn row keeps (and searches)."""
    return _JSON.encode(item.get("content", "")).decode()


def search_text(term: str) -> str:
    """``term`` as it appears inside :func:`content_json`'s text (its JSON escapes)."""
    return _JSON.encode(term).decode()[1:-1]


def user_turns(turns: list[Turn], term: str | None) -> list[dict[str, Any]]:
    """The user turns (all, or those containing ``term``), as openai-agents gives them."""
    pattern = None if term is None else re.compile(re.escape(term), re.IGNORECASE | re.ASCII)
    out = []
    for turn in turns:
        content = msgspec.json.decode(turn.content)
        if pattern is not None:
            texts = (
                [content]
                if isinstance(content, str)
                else [p.get("text", "") for p in content if isinstance(p, dict)]
            )
            if not any(isinstance(t, str) and pattern.search(t) for t in texts):
                continue
        preview = content_preview(content, 100) if term is None else content_preview(content)
        out.append(
            {
                "turn": turn.turn,
                "content": preview,
                "full_content": content,
                "timestamp": stamp(turn.created_at),
                "can_branch": True,
            }
        )
    return out


def run_usage(usage: Any) -> RunUsage:
    """openai-agents' ``Usage`` as our usage figures (its token details kept in ``details``)."""
    input_details = dict(getattr(usage.input_tokens_details, "__dict__", {}) or {})
    output_details = dict(getattr(usage.output_tokens_details, "__dict__", {}) or {})
    details = {f"input_tokens_details.{k}": int(v) for k, v in input_details.items() if isinstance(v, int)}
    details |= {f"output_tokens_details.{k}": int(v) for k, v in output_details.items() if isinstance(v, int)}
    details["total_tokens"] = usage.total_tokens or 0
    figures = RunUsage(
        requests=usage.requests or 0,
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=input_details.get("cached_tokens") or 0,
        output_reasoning_tokens=output_details.get("reasoning_tokens") or 0,
        details=details,
    )
    return figures


def usage_row(turn: int, usage: RunUsage) -> dict[str, Any]:
    def details(prefix: str) -> dict[str, int] | None:
        found = {k[len(prefix) :]: v for k, v in usage.details.items() if k.startswith(prefix)}
        return found or None

    return {
        "user_turn_number": turn,
        "requests": usage.requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.details.get("total_tokens", usage.input_tokens + usage.output_tokens),
        "input_tokens_details": details("input_tokens_details."),
        "output_tokens_details": details("output_tokens_details."),
    }


def content_preview(content: Any, max_length: int | None = None) -> str:
    """A user message's content as text (JSON for parts), cut at ``max_length``, as openai-agents."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return text[:max_length] + "..." if max_length is not None and len(text) > max_length else text


def by_turns(numbered: list[tuple[int, Any]]) -> dict[int, list[dict[str, str | None]]]:
    """Numbered items grouped by turn as ``{"type": ..., "tool_name": ...}``."""
    turns: dict[int, list[dict[str, str | None]]] = {}
    for turn, item in numbered:
        turns.setdefault(turn, []).append({"type": classify(item), "tool_name": tool_name(item)})
    return turns


def turn_preview(turn: Turn) -> Any:
    """A turn's content cut at 50 characters, as openai-agents logs it."""
    text = msgspec.json.decode(turn.content)
    return text[:50] + "..." if isinstance(text, str) and len(text) > 50 else text


def numbered(history: list[Message]) -> list[tuple[int, Any]]:
    """Each item of ``history`` with its turn number (0 before the first user message)."""
    out, turn = [], 0
    for message in history:
        item = item_of(message)
        turn += is_user(item)
        out.append((turn, item))
    return out


def pack(turns: list[list[Any]]) -> str:
    """Turns as text: base64 of the positions, ``|``, base64 of the times (little-endian int64)."""
    parts = []
    for column in (0, 1):
        values = array("q", [t[column] for t in turns])
        if sys.byteorder == "big":
            values.byteswap()
        parts.append(base64.b64encode(values.tobytes()).decode("ascii"))
    return "|".join(parts)


def unpack(value: Any) -> list[list[Any]] | None:
    """The turns :func:`pack` wrote (None for none stored)."""
    if not isinstance(value, str):
        return None
    columns = []
    for part in value.split("|"):
        values = array("q")
        values.frombytes(base64.b64decode(part))
        if sys.byteorder == "big":
            values.byteswap()
        columns.append(values)
    return [[p, m] for p, m in zip(*columns, strict=True)]


async def caught_up(index: TurnIndexCalls[Any], store: Any, known: int | None) -> int | None:
    """Bring the turn index of ``store``'s session up to its end, and return how far it is
    known to be indexed (None: not known, look again next time). ``known``: how far it was
    (None: never looked). Cheap: one read of the session's length; only when another writer
    (the plain session, which knows nothing of turns) appended, the messages past ``known`` (or,
    at the first look, past the last turn), indexed in one write. A session written before the
    index (its turns in its metadata, :data:`TURNS_KEY`) moves into it at the first look."""
    n = await index.length(store.session_id)
    if known is not None and n <= known:
        return n  # nothing new (fewer: popped, and a pop takes its turn row with it)
    if known is None:
        metadata = await store.get_metadata()
        old = unpack(metadata.get(TURNS_KEY))
        if old is not None:
            history = [item_of(m) for m in await store.get_full_history()]
            kept = [(p, t, content_json(history[p])) for p, t in old if p < len(history)]
            await index.adopt(store.session_id, [t for t in kept if is_user(history[t[0]])])
            await store.set_metadata({k: v for k, v in metadata.items() if k != TURNS_KEY})
        last = await index.last(store.session_id)
        known = 0 if last is None else last.position + 1
    if n <= known:
        return n
    tail = [item_of(m) for m in await store.get_tail(n - known)]
    made = ms()
    turns = [(known + i, made, content_json(item)) for i, item in enumerate(tail) if is_user(item)]
    if len(tail) != n - known:
        return known
    if not turns:  # nothing to write: the tail was the right one if the length is still n
        return n if await index.length(store.session_id) == n else known
    return n if await index.extend(store.session_id, known, n, turns) else known
