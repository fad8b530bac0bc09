"""``message_history=`` helpers: a pydantic-ai conversation in any axio-context store.

::

    history = await load_messages(store)
    result = await agent.run("...", message_history=history)
    await save_messages(store, result.new_messages())

Each message is stored with pydantic-ai's own JSON beside native blocks (see :mod:`.messages`),
so :func:`load_messages` gives back what pydantic-ai itself loads from that JSON. On a store
whose sessions carry metadata (SQLite, PostgreSQL), the session is marked as this adapter's on
its first save, and a session another adapter (or plain code) writes is refused
(:class:`~axio_context.errors.SessionOwnerError`), never mixed into.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec
from pydantic_ai import messages as pm

from axio_context.context import ContextStore, check_limit
from axio_context.messages import Message
from axio_context.owners import ADAPTER_KEY, claim
from axio_context.usage_limits import UsageRecorder
from axio_context.usage_limits.pydantic_bridge import from_pydantic_ai

from .messages import (
    JSON_KEY,
    MessageJSONError,
    dump_message,
    model_message,
    native_message,
    native_of_json,
    rebuilt,
)
from .store import ADAPTER

__all__ = ["load_messages", "load_messages_json", "save_messages", "save_messages_json"]

_decode: Final = msgspec.json.Decoder()
_encode: Final = msgspec.json.Encoder()


async def save_messages(
    store: ContextStore,
    messages: Sequence[pm.ModelMessage],
    *,
    usage: UsageRecorder | None = None,
    agent: str = "",
) -> None:
    """Append pydantic-ai messages (a run's ``new_messages()``) in one step: all or none.

    With ``usage`` (a recorder on the same database, e.g. ``SQLiteUsageRecorder.of(store)``, or
    ``PostgresUsageRecorder.of(store)`` on PostgreSQL),
    each ``ModelResponse`` is stored together with its usage (model, run id, tool calls; one
    transaction each) and the messages between responses in one step each, so limits checked
    against that recorder (``UsageGuard``) see every request, across restarts.
    """
    natives = [native_message(m) for m in messages]  # every message encodes before any is written
    await _claim(store, writing=True)
    if usage is None:
        await store.append_many(natives)
        return
    succeeded = {
        part.tool_call_id
        for m in messages
        if isinstance(m, pm.ModelRequest)
        for part in m.parts
        if isinstance(part, pm.ToolReturnPart) and part.outcome == "success"
    }
    pending: list[Message] = []
    for original, native in zip(messages, natives, strict=True):
        if not isinstance(original, pm.ModelResponse):
            pending.append(native)
            continue
        if pending:
            await store.append_many(pending)
            pending = []
        await usage.record(
            from_pydantic_ai(original.usage),
            session_id=store.session_id,
            agent=agent,
            run=original.run_id or "",
            model=original.model_name or "",
            # pydantic-ai counts the tool calls that ran to success (not the retried ones)
            tool_calls=sum(
                isinstance(p, pm.ToolCallPart) and p.tool_call_id in succeeded for p in original.parts
            ),
            message=native,
        )
    if pending:
        await store.append_many(pending)


async def save_messages_json(store: ContextStore, data: bytes | str) -> None:
    """Append messages given as pydantic-ai's JSON (a run's ``new_messages_json()``), each kept
    whole, parts this pydantic-ai does not know included. :class:`~.messages.MessageJSONError`
    (nothing stored) for data that is not a JSON list of pydantic-ai messages."""
    try:
        items = _decode.decode(data)
    except msgspec.DecodeError as exc:
        raise MessageJSONError(f"pydantic-ai messages must be JSON: {exc}") from None
    if not isinstance(items, list):
        raise MessageJSONError(f"pydantic-ai messages must be a JSON list, got {type(items).__name__}")
    natives = []
    for i, item in enumerate(items):
        try:
            natives.append(native_of_json(item, _encode.encode(item).decode()))
        except MessageJSONError as exc:
            raise MessageJSONError(f"message {i}: {exc}") from None
    await _claim(store, writing=True)
    await store.append_many(natives)


async def load_messages(store: ContextStore, *, limit: int | None = None) -> list[pm.ModelMessage]:
    """The stored messages as pydantic-ai loads them (the last ``limit``, reading only those).

    A message with no stored JSON (a compaction summary) is rebuilt from its blocks.
    :class:`~.messages.UnknownPartError` for one from a newer pydantic-ai this one cannot load:
    :func:`load_messages_json` gives it back whole.
    """
    history = await _read(store, limit)
    out: list[pm.ModelMessage] = []
    names: dict[str, str] = {}
    for i, message in enumerate(history):
        loaded = model_message(message, position=i) if _has_json(message) else rebuilt(message, names)
        if isinstance(loaded, pm.ModelResponse):
            names.update(
                (p.tool_call_id, p.tool_name) for p in loaded.parts if isinstance(p, pm.ToolCallPart)
            )
        out.append(loaded)
    return out


async def load_messages_json(store: ContextStore, *, limit: int | None = None) -> bytes:
    """The stored messages as one JSON list in pydantic-ai's format, each message's JSON exactly
    as stored (a newer pydantic-ai's included), for ``ModelMessagesTypeAdapter.validate_json``."""
    history = await _read(store, limit)
    texts = [
        m.metadata[JSON_KEY] if _has_json(m) else dump_message(rebuilt(m))  # type: ignore[index]
        for m in history
    ]
    return ("[" + ",".join(texts) + "]").encode()


def _has_json(message: Message) -> bool:
    return isinstance((message.metadata or {}).get(JSON_KEY), str)


async def _read(store: ContextStore, limit: int | None) -> list[Message]:
    if limit is not None:
        check_limit(limit)
    await _claim(store, writing=False)
    return await (store.get_history() if limit is None else store.get_tail(limit))


def _metadata_store(store: ContextStore) -> Any:
    """The store under any wrappers (an AutoCompactStore's ``store``) that keeps session
    metadata, or None (the memory store keeps none: nothing to check)."""
    inner: Any = store
    for _ in range(8):
        if hasattr(inner, "get_metadata") and hasattr(inner, "set_metadata"):
            return inner
        inner = getattr(inner, "store", None)
        if inner is None:
            return None
    return None


async def _claim(store: ContextStore, *, writing: bool) -> None:
    """Refuse a session another adapter owns; mark it as ours on the first write."""
    inner = _metadata_store(store)
    if inner is None:
        return
    metadata = await inner.get_metadata()
    if metadata.get(ADAPTER_KEY) == ADAPTER:
        return
    wanted = claim(store.session_id, metadata, ADAPTER, has_messages=bool(await inner.get_tail(1)))
    if writing and wanted is not None:
        await inner.set_metadata(wanted)
