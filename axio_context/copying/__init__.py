"""``axio-context copy``: everything one database holds into another, of any two backends
(SQLite to PostgreSQL, back, or alike): the sessions (:mod:`.sessions`, through the lossless
export), then what the layers keep beside them (:mod:`.layers`: usage, memory stores, context
pools, resumable state, framework conversation records, the user turns), each side through
:class:`.sides.LayerSide` and the row Structs of :mod:`.rows`; then the copied messages are
embedded where they arrive (:func:`embed_arrivals`). Idempotent, resumable, and conflicts are
refused, not overwritten.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from ..errors import AxioContextError
from .expiry_sql import carry_item_ttls
from .layers import copy_layers
from .rows import (
    BlobRow,
    CollectionRow,
    ConversationEntryRow,
    ConversationRow,
    DocumentRow,
    EntityRow,
    LayerReport,
    PoolEntryRow,
    PoolRow,
    RelationshipRow,
    RunRow,
    StateRow,
    TaskListRow,
    TaskRow,
    TurnRow,
    UsageRow,
    canonical_json,
)
from .sessions import CopyReport, copy_sessions
from .sides import LAYER_NAMES, LayerSide

if TYPE_CHECKING:
    from ..backends.protocol import OpenDatabase

__all__ = [
    "LAYER_NAMES",
    "BlobRow",
    "CollectionRow",
    "ConversationEntryRow",
    "ConversationRow",
    "CopyAllReport",
    "CopyReport",
    "DocumentRow",
    "EntityRow",
    "LayerReport",
    "LayerSide",
    "PoolEntryRow",
    "PoolRow",
    "RelationshipRow",
    "RunRow",
    "StateRow",
    "TaskListRow",
    "TaskRow",
    "TurnRow",
    "UsageRow",
    "canonical_json",
    "copy_all",
    "copy_sessions",
    "embed_arrivals",
]


class CopyAllReport(msgspec.Struct, frozen=True):
    """What a copy did: the sessions, and per layer what was copied, already there or refused."""

    sessions: CopyReport
    layers: dict[str, LayerReport]
    #: Messages embedded on arrival (with the source's embedder), and why none could be.
    embedded: int = 0
    not_embedded: str | None = None

    @property
    def conflicts(self) -> list[str]:
        """Every refused item's one-line reason."""
        return [line for report in self.layers.values() for line in report.conflicts]


async def copy_all(
    src: OpenDatabase,
    dst: OpenDatabase,
    progress: Callable[[str, int, int], object] | None = None,
    *,
    dry_run: bool = False,
) -> CopyAllReport:
    """Copy everything ``src`` has and ``dst`` lacks (both open databases of any backend);
    ``progress(stage, done, total)`` per stage; ``dry_run`` counts and writes nothing."""

    def sessions_progress(done: int, total: int) -> None:
        if progress is not None:
            progress("sessions", done, total)

    sessions = await copy_sessions(src, dst, sessions_progress, dry_run=dry_run)
    layers = await copy_layers(src.layers(), dst.layers(), dry_run=dry_run, progress=progress)
    if not dry_run:  # the layers' dumps hold no TTL: live items get theirs now
        source = getattr(src.memory_stores(), "runner", None)  # an SQL backend's stores
        dest = getattr(dst.memory_stores(), "runner", None)
        if source is not None and dest is not None:
            await carry_item_ttls(source, dest)
    embedded, why = (0, None) if dry_run else await embed_arrivals(src, dst, progress)
    return CopyAllReport(sessions=sessions, layers=layers, embedded=embedded, not_embedded=why)


async def embed_arrivals(
    src: OpenDatabase, dst: OpenDatabase, progress: Callable[[str, int, int], object] | None = None
) -> tuple[int, str | None]:
    """Embed the messages ``dst`` holds without an embedding with the embedder ``src``'s come
    from: an export carries no vectors (each backend stores them its own way: int8 BLOBs beside
    sqlite-vec codes, pgvector columns), so they are made again where they arrive. Returns how
    many were embedded, and why none could be (an embedder that does not load here, or a
    destination whose embeddings come from another model), a line saying what to run."""
    recorded = await src.embedding_model()
    if recorded is None:
        return 0, None
    model, dimension = recorded
    theirs = await dst.embedding_model()
    if theirs is not None and theirs != recorded:
        return 0, (
            f"the destination's embeddings come from {theirs[0]} ({theirs[1]} dimensions), the"
            f" source's from {model} ({dimension}): the copied messages were not embedded;"
            " `axio-context reindex` there embeds them with its own model"
        )
    try:
        embedder = await dst.embedder(model, dimension=dimension)
    except AxioContextError as exc:
        return 0, (
            f"the copied messages were not embedded ({exc}); run `axio-context --db DST reindex --model"
            f" {model}` where that model loads"
        )

    def embedding(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(f"embeddings ({stage})", done, total)

    report = await dst.reindex(embedder, progress=embedding)
    return report.embedded, None
