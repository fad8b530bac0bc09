"""Compaction into a fork: the conversation goes on in a child session whose view starts with
the summary, and the parent keeps its whole transcript and view untouched.

:class:`~.auto.AutoCompactStore` with ``into_fork=True`` plans the checkpoint as usual (the
summarizer runs outside any lock), then, holding the wrapper's append gate so no append of its
own lands in between, forks the store (one session row on SQLite: O(1)) and writes the
checkpoint in the child only if the child's view still starts with what was summarized. On
success the wrapper swaps to the child; messages appended to the parent while the summary was
written were copied by the fork and stay in the child's view after the summary.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ..checkpoints import Checkpoint, CheckpointStore
from ..context import ContextStore
from ..errors import CheckpointError

__all__ = ["fork_with_checkpoint"]

logger = logging.getLogger("axio_context.compaction")


async def fork_with_checkpoint(
    store: ContextStore, write: Callable[[CheckpointStore], Awaitable[Checkpoint]]
) -> ContextStore:
    """A fork of ``store`` in which ``write`` (a conditional checkpoint write) succeeded.

    A refused checkpoint (the history changed meanwhile, not only by appends) raises
    :class:`CheckpointError`, and the fork is deleted where the store can delete sessions.
    """
    child = await store.fork()
    if not isinstance(child, CheckpointStore):
        raise CheckpointError(f"a fork of {type(store).__name__} keeps no checkpoints")
    try:
        await write(child)
    except CheckpointError:
        delete = getattr(child, "delete_session", None)
        if delete is not None:
            await delete()
        raise
    logger.info("compacted session %s into its fork %s", store.session_id, child.session_id)
    return child
