"""Writing a checkpoint only over the view it summarises: whether a store keeps checkpoints, and
the check-and-write that refuses a checkpoint when the view moved under the compaction."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from ..checkpoints import Checkpoint, CheckpointStore
from ..codec import encode_messages_msgpack
from ..context import ContextStore
from ..errors import CheckpointError
from ..messages import Message

__all__ = ["add_checkpoint_if_view", "starts_with", "supports_checkpoints"]


def supports_checkpoints(store: object) -> bool:
    """True when ``store`` keeps checkpoints (implements :class:`CheckpointStore` for real)."""
    flag = getattr(store, "supports_checkpoints", None)
    if isinstance(flag, bool):
        return flag
    return isinstance(store, CheckpointStore)


def starts_with(view: Sequence[Message], prefix: Sequence[Message]) -> bool:
    """Whether ``view`` starts with exactly ``prefix``, compared as stored (MessagePack): a NaN
    in a tool input equals itself there, as it never does as a float."""
    if len(view) < len(prefix):
        return False
    head = list(view[: len(prefix)])
    try:
        return encode_messages_msgpack(head) == encode_messages_msgpack(list(prefix))
    except Exception:  # a value a memory store keeps that the codec refuses: compare as objects
        return head == list(prefix)


async def add_checkpoint_if_view(
    store: CheckpointStore, checkpoint: Checkpoint, prefix: Sequence[Message]
) -> Checkpoint:
    """Add ``checkpoint`` only if ``store``'s view still starts with ``prefix``, else
    :class:`CheckpointError`.

    Stores whose ``add_checkpoint`` takes ``if_view_starts_with`` (SQLite, AutoCompactStore)
    check in the same transaction. Others are re-read just before the write: with no await in
    between on an in-memory store that is atomic too; on a third-party store doing I/O a
    rewrite landing between the read and the write can still slip through.
    """
    add = store.add_checkpoint
    try:
        checks = "if_view_starts_with" in inspect.signature(add).parameters
    except (TypeError, ValueError):
        checks = False
    if checks:
        stored: Checkpoint = await add(checkpoint, if_view_starts_with=prefix)  # type: ignore[call-arg]
        return stored
    if not isinstance(store, ContextStore):
        raise TypeError(f"{type(store).__name__} is not a ContextStore")
    now = await store.get_history()
    if not starts_with(now, prefix):
        raise CheckpointError("the view changed since the compaction read it; checkpoint not written")
    return await store.add_checkpoint(checkpoint)
