"""Which framework adapter writes a session, so two adapters never mix their transcripts.

An adapter (the openai-agents Session, the pydantic-ai store) records its name in the session's
metadata under :data:`ADAPTER_KEY` when it first writes. Opening a session another adapter
owns, or one that already holds messages no adapter wrote, is a :class:`SessionOwnerError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from .errors import SessionOwnerError

__all__ = ["ADAPTER_KEY", "claim", "claim_read"]

#: The session metadata key naming the adapter that writes the session.
ADAPTER_KEY: Final = "adapter"


def claim(
    session_id: str, metadata: dict[str, Any], adapter: str, *, has_messages: bool
) -> dict[str, Any] | None:
    """Check that ``adapter`` may use the session; returns the metadata to store to claim it,
    or None when it already owns it. :class:`SessionOwnerError` when another adapter owns it,
    or when it holds messages written without one."""
    owner = metadata.get(ADAPTER_KEY)
    if owner == adapter:
        return None
    if owner is not None:
        raise SessionOwnerError(
            f"session {session_id!r} belongs to the {owner!r} adapter, not {adapter!r}: use another id"
        )
    if has_messages:
        raise SessionOwnerError(
            f"session {session_id!r} already holds messages not written by the {adapter!r} adapter: "
            "use another session id"
        )
    return {**metadata, ADAPTER_KEY: adapter}


async def claim_read(
    session_id: str,
    adapter: str,
    metadata: Callable[[], Awaitable[dict[str, Any]]],
    messages: Callable[[], Awaitable[object]],
) -> dict[str, Any] | None:
    """:func:`claim` on the session's stored ``metadata()``, asking ``messages()`` (truthy: it
    holds some) only when no adapter has claimed it. Messages with no owner are read again once:
    a concurrent writer of this adapter may have claimed the session and written between the two
    reads (a claim is stored before its messages), which is not another writer's transcript."""
    stored = await metadata()
    if stored.get(ADAPTER_KEY) is not None:
        return claim(session_id, stored, adapter, has_messages=False)
    try:
        return claim(session_id, stored, adapter, has_messages=bool(await messages()))
    except SessionOwnerError:
        if (await metadata()).get(ADAPTER_KEY) != adapter:
            raise
        return None
