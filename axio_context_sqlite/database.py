"""A whole database: the multi-session calls the command line (and any tool) makes.

:class:`Database` wraps an open connection; each method is one library call, most of them one
hop to the connection's worker thread (the SQL lives in :mod:`.admin`, :mod:`.search` and
:mod:`.store`). The admin calls (sessions, export, import, maintenance, check) are inherited
from :class:`.admin.jobs.DatabaseJobs`; searching and embedding are here.
:func:`open_database` opens one by path, refusing to create a file when asked only to read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
import msgspec

from axio_context.embeddings import (
    Embedder,
    check_embedder,
    vector_to_blob,
)
from axio_context.encryption import (
    EncryptionUnavailableError,
    KeyRequiredError,
    NotEncryptedError,
    WrongKeyError,
)
from axio_context.errors import (
    DatabaseNotFoundError,
    DatabaseOpenError,
    EmbedderUnavailableError,
    ReadOnlyDatabaseError,
    SearchQueryError,
)
from axio_context.search.calls import MessageSearch, SearchRequest
from axio_context.search.embedders import DEFAULT_DIMENSION, HASHING_MODEL, choose_embedder

from .admin.axio_migration import AxioImportReport
from .admin.exporting import ExportSummary
from .admin.importing import ImportReport
from .admin.jobs import DatabaseJobs
from .admin.live import DatabaseLive, FollowUpdate
from .admin.stores import DatabaseStores
from .errors import EmptyDatabaseError
from .paths import db_path as db_location
from .search import engine as search
from .search import reindex as reindexing
from .search.engine import MAX_K, IndexStatus, Mode, Query, ReindexReport, SearchHit, SearchResults
from .search.fts import raw_words
from .search.query import keyword_part
from .search.settings import read_settings
from .search.status import VectorSpace, index_status, vector_bytes, vector_space
from .store.calls import run
from .store.catalog import SessionView
from .store.checking import CheckReport, DamagedRow, QuarantinedRow
from .store.connection import connect
from .store.embedding import check_finite, embed_batch, embed_checked
from .store.message_rows import ROLE_CODES
from .store.recompressing import RecompressReport
from .store.upkeep import Stats, VacuumReport

__all__ = [
    "DEFAULT_DIMENSION",
    "HASHING_MODEL",
    "AxioImportReport",
    "CheckReport",
    "DamagedRow",
    "Database",
    "ExportSummary",
    "FollowUpdate",
    "ImportReport",
    "IndexStatus",
    "QuarantinedRow",
    "RecompressReport",
    "ReindexProgress",
    "ReindexReport",
    "SearchHit",
    "SearchResults",
    "SessionView",
    "Stats",
    "VacuumReport",
    "VectorSpace",
    "open_database",
]


#: ``progress(stage, done, total)`` during a reindex; stage is "embedding" or "codes".
ReindexProgress = Callable[[str, int, int], object]


async def _query_vector(emb: Embedder, query: str) -> bytes | None:
    """The query's embedding as a float32 BLOB; None for a zero vector (it is near nothing)."""
    [vec] = await embed_checked(emb, [query], "query")
    check_finite(emb.model, vec, "the query")
    return vector_to_blob(vec) if any(vec) else None


class Database(DatabaseJobs, DatabaseLive, DatabaseStores, MessageSearch):
    """Every session of one database file: list, show, export, import, migrate, maintain."""

    def __init__(self, conn: aiosqlite.Connection, path: str | Path) -> None:
        self._conn = conn
        self._path = Path(path)
        self._models: dict[str, Embedder] = {}

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def connection(self) -> aiosqlite.Connection:
        """The connection used (owned by whoever opened it)."""
        return self._conn

    # -- searching -------------------------------------------------------------------------------

    async def _search(self, r: SearchRequest) -> SearchResults:
        """Run a checked search (see :meth:`MessageSearch.search`): FTS5 bm25 for the words (``raw``
        takes FTS5 query syntax), the embeddings' nearest, or both fused by reciprocal rank."""
        query, mode, raw, embedder, model = r.query, r.mode, r.raw, r.embedder, r.model
        role_code = None if r.role is None else ROLE_CODES[r.role]
        match, terms = keyword_part(query, mode, raw)  # with raw: a filter in every mode
        vector = None
        name = dimension = None
        emb, fallback = (
            (None, None) if mode == "keyword" else await self._query_embedder(mode, embedder, model)
        )
        if emb is not None:
            name, dimension = emb.model, emb.dimension
            wanted = raw_words(query) if raw else query
            if wanted.strip():
                vector = await _query_vector(emb, wanted)
        if match is None and vector is None:
            return SearchResults(fallback=fallback)
        if raw and mode == "semantic" and vector is None:
            # Nothing to embed: only operators, or words the expression excludes. Say so (or what
            # is wrong with the expression) rather than answer "no matches".
            await run(self._conn, search.check_expression, query, match)
            raise SearchQueryError(
                f"raw query {query!r} has no word to search for by meaning (only operators or"
                " excluded words); run it as a keyword search"
            )
        q = Query(query, mode, r.k, match, raw, terms, vector, name, dimension, r.project, r.session_id)
        tags = {"agent_id": r.agent_id, "run_id": r.run_id}
        q = msgspec.structs.replace(q, role=role_code, since_ms=r.since_ms, **tags)
        results = await run(self._conn, search.search, q)
        results.fallback = fallback
        return results

    async def _query_embedder(
        self, mode: Mode, embedder: Embedder | None, model: str | None
    ) -> tuple[Embedder | None, str | None]:
        """The embedder a semantic or hybrid search uses, or for a hybrid search that runs by
        keyword alone None and the reason (the one place that decides it)."""
        if embedder is not None:
            check_embedder(embedder)  # refused even where it would not run
        if mode == "hybrid" and await self.embedding_model() is None:
            return None, (
                "no message is embedded yet, so this was a keyword search; `axio-context reindex` embeds them"
            )
        if embedder is None:
            try:
                embedder = await self.embedder(model)
            except EmbedderUnavailableError as exc:
                if mode != "hybrid" or model is not None:
                    raise
                return None, f"{exc}; this was a keyword search"
        check_embedder(embedder)
        return embedder, None

    async def similar(self, session_id: str, position: int, k: int = 10) -> SearchResults:
        """The ``k`` messages nearest in meaning to message ``position`` of a session (itself
        left out; -1 is its last message), from its stored embedding: no embedder needed."""
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be between 1 and {MAX_K}, not {k!r}")
        return await run(self._conn, search.similar, session_id, position, k)

    async def index_status(self) -> IndexStatus:
        """The embedder recorded, how many messages are embedded, and how semantic search runs."""
        return await run(self._conn, index_status)

    async def embedding_model(self) -> tuple[str, int] | None:
        """The (model, dimension) this database's embeddings come from; None before the first."""
        settings = await run(self._conn, read_settings)
        model, dim = settings.get("embedding_model"), settings.get("embedding_dimension")
        return None if model is None or dim is None else (model, int(dim))

    async def embedder(self, model: str | None = None, *, dimension: int | None = None) -> Embedder:
        """The embedder for ``model``, by default the one this database's embeddings come from.

        ``hashing`` (or its model name, ``axio-hashing-v1``) is the offline
        :class:`HashingEmbedder`, as wide as the database's embeddings (else ``dimension``, else
        384); ``minilm`` is the bundled all-MiniLM-L6-v2 of the ``minilm`` extra; ``minilm-onnx``
        the same model as int8 ONNX without torch (the ``minilm-onnx`` extra); anything else a
        local sentence-transformers model directory or cached name. Loaded once per Database.
        """
        return await choose_embedder(model, await self.embedding_model(), self._models, dimension=dimension)

    async def reindex(
        self,
        embedder: Embedder,
        *,
        batch_size: int = 256,
        progress: ReindexProgress | None = None,
        rebuild: bool = False,
        on_estimate: Callable[[int, int], object] | None = None,
    ) -> ReindexReport:
        """Embed every message that has no embedding yet, then bring the sqlite-vec codes in step.

        Resumable: each batch commits on its own, so an interrupted run loses nothing and the
        next one starts where it stopped. ``rebuild`` first clears every embedding and records
        ``embedder`` as the database's model, in one transaction (switching models), then
        re-embeds. Stale codes (left by a connection without sqlite-vec) are reconciled here.
        Before embedding, ``on_estimate(messages, bytes)`` is told how many messages lack an
        embedding and about how much the file will grow for them (also the report's
        ``estimated_bytes``): embeddings can take several times the space of the text.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        check_embedder(embedder)  # before anything is recorded: a width of 0 would embed nothing
        model, dim = embedder.model, embedder.dimension
        missing, vec = await run(self._conn, reindexing.reindex_begin, model, dim, rebuild)
        estimated = missing * vector_bytes(dim, vec)
        if on_estimate is not None:
            on_estimate(missing, estimated)
        # embeddings of an older database are float32: stored again as int8, a quarter of the space
        floats = await run(self._conn, reindexing.float_vectors)
        quantized = 0
        if floats and progress is not None:
            progress("quantizing", 0, floats)
        while quantized < floats:
            done = await run(self._conn, reindexing.quantize_vectors, 4 * batch_size)
            if not done:
                break
            quantized += done
            if progress is not None:
                progress("quantizing", min(quantized, floats), floats)
        embedded = without_text = scanned = 0
        after = -1
        if progress is not None:
            progress("embedding", 0, missing)
        while True:
            pending = await run(self._conn, reindexing.reindex_read, after, batch_size)
            if pending.scanned == 0:
                break
            batch = await embed_batch(embedder, pending.texts, vec)
            embedded += await run(self._conn, reindexing.reindex_write, model, dim, pending, batch.rows)
            without_text += pending.scanned - len(batch.rows)
            scanned += pending.scanned
            after = pending.last_id
            if progress is not None:
                progress("embedding", min(scanned, missing), max(missing, scanned))
        added = removed = 0
        needed, token = await run(self._conn, reindexing.codes_plan)
        if needed and token is not None:
            orphans, uncoded = await run(self._conn, reindexing.codes_diff)
            removed = await run(self._conn, reindexing.codes_remove, orphans)
            if progress is not None:
                progress("codes", 0, len(uncoded))
            for start in range(0, len(uncoded), batch_size):
                added += await run(self._conn, reindexing.codes_add, uncoded[start : start + batch_size])
                if progress is not None:
                    progress("codes", min(start + batch_size, len(uncoded)), len(uncoded))
            await run(self._conn, reindexing.codes_finish, token)
        settings = await run(self._conn, read_settings)
        return ReindexReport(
            model=model,
            dimension=dim,
            embedded=embedded,
            without_text=without_text,
            codes_added=added,
            codes_removed=removed,
            rebuilt=rebuild,
            codes_stale="codes_stale" in settings,
            estimated_bytes=estimated,
            quantized=quantized,
        )

    async def vector_space(self) -> VectorSpace:
        """Bytes the embeddings and their sqlite-vec codes take in the file now."""
        return await run(self._conn, vector_space)


#: Errors of a key that does not fit the file: opening read-only instead would fail the same way.
_KEY_ERRORS = (EncryptionUnavailableError, KeyRequiredError, NotEncryptedError, WrongKeyError)


def _existing(target: Path) -> None:
    """Refuse a path that holds no database yet: missing, or an empty file (which a reader must
    leave empty, and a writer that may not create one must not fill with a schema)."""
    if not target.is_file():
        what = ": it is a directory" if target.is_dir() else ""
        raise DatabaseNotFoundError(f"no database at {target}{what}")
    if target.stat().st_size == 0:
        wal = target.with_name(target.name + "-wal")
        if not wal.is_file() or wal.stat().st_size == 0:
            raise EmptyDatabaseError(f"no database at {target} yet: the file is empty")


@asynccontextmanager
async def open_database(
    path: str | Path | None = None,
    *,
    create: bool = True,
    readonly: bool = False,
    busy_timeout: float = 5.0,
    key: bytes | str | None = None,
) -> AsyncIterator[Database]:
    """Open a database file for the duration of an ``async with`` block.

    ``path`` None is :func:`~axio_context_sqlite.paths.default_db_path`, as for :func:`connect`.
    With ``create=False`` a missing or empty file is a :class:`DatabaseNotFoundError` (an empty
    one :class:`EmptyDatabaseError`) and nothing is created, and a file that cannot be written
    (a read-only file or folder) is opened read-only instead, so reading still works.
    ``readonly`` (implies ``create=False``) never writes to the file at all: no schema, no
    upgrade, no index upkeep. ``key``: an encrypted file's key, as :func:`connect` takes it.
    """
    target = await asyncio.to_thread(lambda: db_location(path)[0])
    if readonly or not create:
        await asyncio.to_thread(_existing, target)
    if readonly:
        conn = await connect(target, busy_timeout=busy_timeout, readonly=True, key=key)
    else:
        try:
            conn = await connect(target, busy_timeout=busy_timeout, key=key)
        except (ReadOnlyDatabaseError, DatabaseOpenError) as exc:
            if create or isinstance(exc, _KEY_ERRORS):
                raise
            conn = await connect(target, busy_timeout=busy_timeout, readonly=True, key=key)
    try:
        yield Database(conn, target)
    finally:
        await conn.close()
