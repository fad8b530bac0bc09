"""``axio-context copy``: everything one database holds into another (SQLite to PostgreSQL, back,
or alike): the sessions (:mod:`.sessions`, through the lossless export), then what the layers
keep beside them (:mod:`.layers`: usage, memory stores, context pools, resumable state,
framework conversation records). Idempotent, resumable, and conflicts are refused, not
overwritten.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from axio_context.copying import LayerReport

from .layers import copy_layers
from .sessions import CopyReport, copy_sessions
from .sides import side_of

__all__ = ["CopyAllReport", "CopyReport", "LayerReport", "copy_all", "copy_sessions"]


class CopyAllReport(msgspec.Struct, frozen=True):
    """What a copy did: the sessions, and per layer what was copied, already there or refused."""

    sessions: CopyReport
    layers: dict[str, LayerReport]

    @property
    def conflicts(self) -> list[str]:
        """Every refused item's one-line reason."""
        return [line for report in self.layers.values() for line in report.conflicts]


async def copy_all(
    src: object,
    dst: object,
    progress: Callable[[str, int, int], object] | None = None,
    *,
    dry_run: bool = False,
) -> CopyAllReport:
    """Copy everything ``src`` has and ``dst`` lacks (both open databases of either backend);
    ``progress(stage, done, total)`` per stage; ``dry_run`` counts and writes nothing."""

    def sessions_progress(done: int, total: int) -> None:
        if progress is not None:
            progress("sessions", done, total)

    sessions = await copy_sessions(src, dst, sessions_progress, dry_run=dry_run)
    layers = await copy_layers(side_of(src), side_of(dst), dry_run=dry_run, progress=progress)
    return CopyAllReport(sessions=sessions, layers=layers)
