"""One side of a copy: what a backend's database gives ``copy`` for the layers beside the
sessions (:meth:`axio_context.backends.OpenDatabase.layers`), so the copy never asks which backend
it has."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["LAYER_NAMES", "LayerSide"]

#: The layers a side dumps and loads, by name (``usage`` first; see :mod:`.layers`).
LAYER_NAMES = (
    "usage",
    "collections",
    "blobs",
    "graph_entities",
    "graph_relationships",
    "task_lists",
    "pools",
    "states",
    "conversations",
    "conversation_entries",
    "turns",
    "runs",
)


class LayerSide(Protocol):
    """A database's layers: :meth:`dump` every item of one, :meth:`load` a batch of items."""

    async def dump(self, layer: str) -> list[Any]:
        """Every item of ``layer`` (one of :data:`LAYER_NAMES`) as its row Struct of :mod:`.rows`."""
        ...

    async def load(self, layer: str, items: Sequence[Any]) -> list[bool]:
        """Write ``items`` in one transaction; per item, whether it was written (a state whose
        session is not here is not)."""
        ...

    async def hidden(self) -> dict[str, list[int]]:
        """Per session, the positions ``clear_run`` hid (an export leaves them out and numbers
        the rest densely, so positions that point at messages are renumbered the same way)."""
        ...
