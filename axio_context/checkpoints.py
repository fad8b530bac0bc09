"""Compaction checkpoints: how a store keeps the full transcript and a compacted view at once.

A checkpoint says "the model sees ``summary`` in place of messages ``[0, position)``". A store
that supports checkpoints returns ``summary + full[position:]`` from ``get_history()`` (for its
latest checkpoint) and every message from ``get_full_history()``. Writing a checkpoint is one
atomic step; nothing is deleted, so the transcript survives any crash and stays exportable.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import msgspec

from .messages import Message

__all__ = ["Checkpoint", "CheckpointStore"]


class Checkpoint(msgspec.Struct, frozen=True, omit_defaults=True):
    """One compaction: the summary standing in for the transcript before ``position``."""

    #: Messages ``[0, position)`` of the full transcript are replaced by ``summary`` in the view.
    position: int
    #: What the model sees instead (typically a summary user message and an acknowledgement).
    summary: list[Message]
    #: Estimated tokens of the view before and after this compaction.
    tokens_before: int = 0
    tokens_after: int = 0
    #: Who wrote the summary: a model name, or the summarizer's class for offline ones.
    summarizer: str = ""
    #: ISO-8601 UTC time the store recorded it; set by the store.
    created_at: str = ""
    #: Store-assigned id, increasing within a session; 0 before it is stored.
    id: int = 0


@runtime_checkable
class CheckpointStore(Protocol):
    """The optional capability AutoCompactStore uses to compact without losing anything."""

    async def get_full_history(self) -> list[Message]:
        """Every message ever appended (and not cleared/popped), ignoring checkpoints."""
        ...

    async def add_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        """Record a checkpoint atomically and return it as stored (with id and created_at).

        ``position`` must not exceed the current full length; messages appended after the view
        was read stay after the summary.
        """
        ...

    async def list_checkpoints(self) -> list[Checkpoint]:
        """This session's checkpoints, oldest first (inherited ones included for forks)."""
        ...

    async def estimated_view_tokens(self) -> int:
        """Estimated tokens of ``get_history()`` from cached per-message counts, without reading it."""
        ...
