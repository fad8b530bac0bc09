"""What a database backend gives the command line, the browser, ``copy``, the bridges and the
layers: typed Protocols, checked by mypy against each backend's database class.

:class:`OpenDatabase` is what every backend has. What only some have is a :class:`Capability`
the database declares in ``capabilities``, with the Protocol of its calls (:class:`FileUpkeep`,
:class:`DamageChecking`, :class:`AxioImport`); :func:`file_upkeep`, :func:`damage_checking` and
:func:`axio_import` hand out that view or raise :class:`UnsupportedCapabilityError` with the
backend's own one-line advice (``instead``). No backend stubs a call it cannot make.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from ..context import ContextStore
from ..copying.sides import LayerSide
from ..embeddings import Embedder
from ..errors import AxioContextError, DatabaseLockedError
from ..following import FollowUpdate
from ..memory import BlobStore, Document, Entity, GraphStore, StoreExpiry, TaskStore, VectorStore
from ..memory_blocks.store import BlockStore
from ..messages import SessionInfo
from ..pools.sql import PoolInfo, PoolView
from ..search.query import Mode
from ..search.results import ReindexReport, SearchResults
from ..transcript import FormatName, MessageRecord, TranscriptWriter
from ..transcript.reports import DamagedRow, ExportSummary, ImportReport
from ..usage_limits import UsageRecorder
from ..views import ProjectStats, SessionNode, SessionPage, SessionSort, SessionTreePage, SessionView

__all__ = [
    "AxioImport",
    "Browsable",
    "Capability",
    "DamageChecking",
    "DatabaseStats",
    "FileUpkeep",
    "IndexState",
    "MemoryStores",
    "OpenDatabase",
    "StoredStateView",
    "UnsupportedCapabilityError",
    "axio_import",
    "damage_checking",
    "file_upkeep",
    "require",
    "supports",
]

#: ``sink(chunk)``: where an export's bytes go.
Sink = Callable[[bytes], object]
#: ``progress(done, total)``.
Progress = Callable[[int, int], object]


class Capability(StrEnum):
    """A call only some backends can make (an SQLite file's upkeep, say)."""

    VACUUM = "vacuum"
    RECOMPRESS = "recompress"
    CHECKPOINT = "checkpoint"
    BACKUP = "backup"
    CHECK = "check"
    IMPORT_AXIO = "import-axio"


class UnsupportedCapabilityError(AxioContextError):
    """The database's backend cannot do this; the message says what to use instead."""


class DatabaseStats(Protocol):
    """The totals every backend's ``stats`` gives (each adds its own: file pages, table sizes)."""

    @property
    def sessions(self) -> int: ...
    @property
    def messages(self) -> int: ...
    @property
    def stored_messages(self) -> int: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def checkpoints(self) -> int: ...
    @property
    def vectors(self) -> int: ...
    @property
    def schema_version(self) -> int: ...
    @property
    def by_project(self) -> list[ProjectStats]: ...


class IndexState(Protocol):
    """What every backend's ``index_status`` says: the embedder recorded, and coverage."""

    @property
    def model(self) -> str | None: ...
    @property
    def dimension(self) -> int | None: ...
    @property
    def messages(self) -> int: ...
    @property
    def embedded(self) -> int: ...
    @property
    def semantic(self) -> str: ...


class StoredStateView(Protocol):
    """An agent state saved with a session, as stored (the ``state`` command's view)."""

    @property
    def session_id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def state(self) -> dict[str, Any]: ...
    @property
    def subagents(self) -> dict[str, str]: ...
    @property
    def saved_at(self) -> int: ...


class ListedVectorStore(VectorStore, Protocol):
    """A vector store that also lists a collection's documents (``collections show``)."""

    async def documents(self, collection: str = ..., *, limit: int = 20) -> list[Document]: ...


class ListedGraphStore(GraphStore, Protocol):
    """A graph store that also lists its entities (``graph entities``)."""

    async def entities(self, *, entity_type: str | None = None, limit: int = 50) -> list[Entity]: ...


class MemoryStores(Protocol):
    """A database's memory stores (contracts plus the command line's listing calls), blocks, expiry."""

    def vectors(self) -> ListedVectorStore: ...
    def blobs(self) -> BlobStore: ...
    def graph(self) -> ListedGraphStore: ...
    def tasks(self) -> TaskStore: ...
    def blocks(self) -> BlockStore: ...
    def expiry(self) -> StoreExpiry: ...


class Browsable(Protocol):
    """What a live browser reads and does, whichever backend holds the sessions, so the
    browser's screens and ``show --follow`` never ask which (:meth:`OpenDatabase.browser`)."""

    @property
    def path(self) -> str | Path:
        """What the database is: its file, or its URL with the password hidden."""
        ...

    async def data_version(self) -> object:
        """A value that changes when another connection (or process) commits a write."""
        ...

    def session_tree(
        self,
        project: str | None = None,
        *,
        text: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        agent_id: str | None = None,
        sort: SessionSort = "created",
    ) -> Awaitable[SessionTreePage]: ...

    def transcript(
        self, session_id: str, *, full: bool = False, limit: int = 200
    ) -> Awaitable[SessionView]: ...

    def messages(
        self, session_id: str, start: int, end: int | None = None
    ) -> Awaitable[tuple[int, list[MessageRecord]]]: ...

    def follow(
        self,
        session_id: str,
        start: int,
        *,
        interval: float = 0.25,
        on_locked: Callable[[DatabaseLockedError], object] | None = None,
    ) -> AsyncGenerator[FollowUpdate, None]: ...

    def info(self, session_id: str) -> Awaitable[SessionInfo]: ...
    def memory_blocks(self) -> BlockStore: ...  # an agent's blocks, shown beside its sessions
    def resolve(self, prefix: str) -> Awaitable[str]: ...

    def latest(self, sort: SessionSort = "created") -> Awaitable[str]: ...

    def short_ids(self, ids: Iterable[str | None]) -> Awaitable[dict[str, str]]: ...

    def stored_project(self, project: str | None) -> Awaitable[str | None]: ...

    def search(self, query: str, *, k: int = 10, mode: Mode = "hybrid") -> Awaitable[SearchResults]: ...

    def fork(self, session_id: str, new_id: str | None = None) -> Awaitable[str]: ...

    def rename(self, session_id: str, new_id: str) -> Awaitable[None]: ...

    def delete(self, session_ids: Sequence[str]) -> Awaitable[list[str]]: ...

    def export(
        self,
        sink: Sink,
        *,
        format: FormatName = "json",
        session_ids: Sequence[str] | None = None,
    ) -> Awaitable[ExportSummary]: ...


@runtime_checkable
class OpenDatabase(Protocol):
    """One open database, whatever its backend: each call the command line, ``copy`` or a bridge makes."""

    @property
    def path(self) -> str | Path:
        """Where the database is, as people may see it (a URL's password hidden)."""
        ...

    @property
    def capabilities(self) -> frozenset[Capability]:
        """The calls beyond this Protocol that this database makes (see :func:`require`)."""
        ...

    def instead(self, capability: Capability) -> str:
        """One line saying what to use here instead of a capability it lacks."""
        ...

    # -- finding sessions
    async def list_sessions(
        self,
        project: str | None = None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        since: datetime | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        sort: SessionSort = "created",
    ) -> SessionPage: ...
    async def resolve(self, prefix: str) -> str: ...
    async def latest(self, sort: SessionSort = "created") -> str: ...
    async def complete(self, prefix: str, limit: int = 50) -> list[str]: ...
    async def short_ids(self, ids: Iterable[str | None]) -> dict[str, str]: ...
    async def stored_project(self, project: str | None) -> str | None: ...
    async def info(self, session_id: str) -> SessionInfo: ...

    # -- reading
    async def show(
        self, session_id: str, *, full: bool = False, run_id: str | None = None
    ) -> SessionView: ...
    async def agents_of(self, session_ids: Sequence[str]) -> dict[str, tuple[str, str]]: ...
    async def agent_session(self, agent_id: str, thread_id: str) -> str: ...
    async def export(
        self,
        sink: Sink,
        *,
        format: FormatName | TranscriptWriter = "json",
        session_ids: Sequence[str] | None = None,
        progress: Progress | None = None,
        skip_damaged: bool = False,
        blocks: bool | None = None,
    ) -> ExportSummary: ...
    async def stats(self) -> DatabaseStats: ...
    async def lineage_tree(
        self,
        project: str | None = None,
        *,
        limit: int | None = None,
        since: datetime | None = None,
        sort: SessionSort = "created",
    ) -> list[SessionNode]:
        """Root sessions newest first with their subagent sessions and forks below them."""
        ...

    async def descendants(self, session_ids: Sequence[str]) -> list[str]: ...
    async def load_stored(self, session_id: str) -> StoredStateView | None: ...

    # -- writing
    async def import_file(
        self,
        path: str | Path,
        *,
        format: Literal["json", "jsonl"] | None = None,
        replace: bool = False,
        new_ids: bool = False,
    ) -> ImportReport: ...
    async def fork(self, session_id: str, new_id: str | None = None) -> str: ...
    async def delete(self, session_ids: Sequence[str]) -> list[str]: ...
    async def rename(self, session_id: str, new_id: str) -> None: ...
    async def set_title(self, session_id: str, title: str | None) -> None: ...
    async def prune(
        self,
        *,
        before: datetime | None = None,
        keep: int | None = None,
        project: str | None = None,
        dry_run: bool = False,
        only: Sequence[str] | None = None,
    ) -> list[SessionInfo]: ...

    # -- searching
    async def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: Mode = "hybrid",
        project: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        raw: bool = False,
        embedder: Embedder | None = None,
        model: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        blocks: bool | None = None,
    ) -> SearchResults: ...
    async def similar(self, session_id: str, position: int, k: int = 10) -> SearchResults: ...
    async def index_status(self) -> IndexState: ...
    async def embedding_model(self) -> tuple[str, int] | None: ...
    async def embedder(self, model: str | None = None, *, dimension: int | None = None) -> Embedder: ...
    async def reindex(
        self,
        embedder: Embedder,
        *,
        batch_size: int = 256,
        progress: Callable[[str, int, int], object] | None = None,
        rebuild: bool = False,
        on_estimate: Callable[[int, int], object] | None = None,
    ) -> ReindexReport: ...

    # -- the layers it hands out, on its own connection or pool
    def store(self, session_id: str, project: str | None = None) -> ContextStore:
        """One session of this database, on its connection (or pool)."""
        ...

    def memory_stores(self) -> MemoryStores: ...
    async def memory_stats(self) -> Any:
        """What the memory stores hold, for ``stats`` (None where it is not measured)."""
        ...

    def usage_recorder(self) -> UsageRecorder: ...
    async def list_pools(self, kind: str | None = None) -> Sequence[PoolInfo]:
        """Every context queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
        ...

    async def show_pool(self, name: str, *, limit: int) -> PoolView:
        """The queue or pool ``name`` with its first ``limit`` items."""
        ...

    def browser(self) -> Browsable:
        """This database as the browser and ``show --follow`` read it."""
        ...

    def layers(self) -> LayerSide:
        """The layers beside the sessions, as ``copy`` dumps and loads them."""
        ...


class FileUpkeep(Protocol):
    """Looking after a file (:data:`Capability.VACUUM`, ``RECOMPRESS``, ``CHECKPOINT``, ``BACKUP``)."""

    async def vacuum(self, *, full: bool = False) -> Any: ...
    async def recompress(self, progress: Progress | None = None) -> Any: ...
    async def checkpoint(self) -> bool: ...
    async def backup(self, dest: str | Path, *, overwrite: bool = False) -> None: ...


class DamageChecking(Protocol):
    """Finding rows that do not decode and moving them aside (:data:`Capability.CHECK`)."""

    async def check(self, *, quarantine: bool = False) -> Any: ...
    async def quarantine(self, rows: Sequence[DamagedRow] | None = None) -> list[DamagedRow]: ...
    async def quarantined(self) -> Sequence[Any]: ...


class AxioImport(Protocol):
    """Migrating an axio-context-sqlite database in (:data:`Capability.IMPORT_AXIO`)."""

    async def import_axio(self, path: str | Path, *, replace: bool = False) -> Any: ...


def supports(db: OpenDatabase, capability: Capability) -> bool:
    """Whether ``db`` declares ``capability``."""
    return capability in db.capabilities


def require(db: OpenDatabase, capability: Capability) -> None:
    """Nothing when ``db`` declares ``capability``; else :class:`UnsupportedCapabilityError`
    with the backend's one line on what to use instead."""
    if capability not in db.capabilities:
        raise UnsupportedCapabilityError(db.instead(capability))


def file_upkeep(db: OpenDatabase, capability: Capability = Capability.VACUUM) -> FileUpkeep:
    """``db`` as a file to look after, once it declares ``capability`` (see :func:`require`)."""
    require(db, capability)
    return db  # type: ignore[return-value]  # declared: its class is checked against FileUpkeep


def damage_checking(db: OpenDatabase) -> DamageChecking:
    """``db`` as a database to check for damage, once it declares :data:`Capability.CHECK`."""
    require(db, Capability.CHECK)
    return db  # type: ignore[return-value]  # declared: its class is checked against DamageChecking


def axio_import(db: OpenDatabase) -> AxioImport:
    """``db`` as a database to migrate an axio file into, once it declares ``IMPORT_AXIO``."""
    require(db, Capability.IMPORT_AXIO)
    return db  # type: ignore[return-value]  # declared: its class is checked against AxioImport
