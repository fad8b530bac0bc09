"""A whole database: the multi-session calls the command line (and any tool) makes.

:class:`Database` wraps an open connection; each method is one library call, most of them one
hop to the connection's worker thread (the SQL lives in :mod:`.admin` and :mod:`.sessions`).
:func:`open_database` opens one by path, refusing to create a file when asked only to read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Literal
from uuid import uuid4

import aiosqlite

from axio_context.embeddings import (
    BUNDLED_MINILM,
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    vector_to_blob,
)
from axio_context.errors import (
    DatabaseNotFoundError,
    DatabaseOpenError,
    EmbedderUnavailableError,
    ReadOnlyDatabaseError,
    SearchQueryError,
)
from axio_context.messages import SessionInfo
from axio_context.transcript import FormatName, TranscriptWriter, writer_for

from .admin import axio_migration
from .admin import maintenance as admin
from .admin.maintenance import (
    AxioImportReport,
    ExportSummary,
    ImportReport,
    Progress,
    RecompressReport,
    SessionView,
    Sink,
    Stats,
    VacuumReport,
)
from .search import engine as search
from .search.engine import MAX_K, MODES, IndexStatus, Mode, Query, ReindexReport, SearchHit, SearchResults
from .search.fts import match_terms, raw_expression, raw_words
from .store.calls import run
from .store.checkpointer import truncate_wal
from .store.connection import connect
from .store.embedding import check_finite, embed_batch, embed_checked
from .store.listing import SessionPage
from .store.message_rows import ROLE_CODES

__all__ = [
    "AxioImportReport",
    "Database",
    "ExportSummary",
    "ImportReport",
    "IndexStatus",
    "RecompressReport",
    "ReindexProgress",
    "ReindexReport",
    "SearchHit",
    "SearchResults",
    "SessionView",
    "Stats",
    "VacuumReport",
    "open_database",
]


#: ``progress(stage, done, total)`` during a reindex; stage is "embedding" or "codes".
ReindexProgress = Callable[[str, int, int], object]

#: Dimension of the hashing embedder a database gets when nothing is recorded yet.
DEFAULT_DIMENSION = 384
#: The model name the hashing embedder records.
HASHING_MODEL = HashingEmbedder().model


def _ms(when: datetime | None) -> int | None:
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.astimezone()  # a naive time is the local time
    return int(when.timestamp() * 1000)


async def _query_vector(emb: Embedder, query: str) -> bytes | None:
    """The query's embedding as a float32 BLOB; None for a zero vector (it is near nothing)."""
    [vec] = await embed_checked(emb, [query], "query")
    check_finite(emb.model, vec, "the query")
    return vector_to_blob(vec) if any(vec) else None


class Database:
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

    # -- finding sessions ------------------------------------------------------------------------

    async def list_sessions(
        self,
        project: str | None = None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        since: datetime | None = None,
    ) -> SessionPage:
        """Sessions newest first (all projects unless ``project``), one keyset page at a time."""
        return await run(self._conn, admin.list_sessions, project, limit, cursor, _ms(since))

    async def resolve(self, prefix: str) -> str:
        """The session id equal to ``prefix``, or the only one starting with it (like git)."""
        return await run(self._conn, admin.resolve, prefix)

    async def latest(self) -> str:
        """The newest session's id (SessionNotFoundError when there is none)."""
        return await run(self._conn, admin.latest)

    async def complete(self, prefix: str, limit: int = 50) -> list[str]:
        """Session ids starting with ``prefix``, for shell completion."""
        return await run(self._conn, admin.ids_with_prefix, prefix, limit)

    async def info(self, session_id: str) -> SessionInfo:
        """One session's listing entry."""
        from .store import listing

        return await run(self._conn, listing.session_info, session_id)

    # -- reading ---------------------------------------------------------------------------------

    async def show(self, session_id: str, *, full: bool = False) -> SessionView:
        """A session's fields and its model view, or with ``full`` its whole transcript."""
        return await run(self._conn, admin.show, session_id, full)

    async def export(
        self,
        sink: Sink,
        *,
        format: FormatName | TranscriptWriter = "json",
        session_ids: Sequence[str] | None = None,
        progress: Progress | None = None,
    ) -> ExportSummary:
        """Write sessions (every one when ``session_ids`` is None) to ``sink`` in one snapshot.

        ``sink(chunk)`` and ``progress(done, total)`` are called on the database's worker thread;
        memory stays flat because sessions and messages are read in batches.
        """
        writer = writer_for(format) if isinstance(format, str) else format
        ids = None if session_ids is None else list(session_ids)
        return await run(self._conn, admin.export, writer, ids, sink, progress)

    async def stats(self) -> Stats:
        """Totals, per project, and size on disk."""
        return await run(self._conn, admin.stats, self._path)

    # -- searching -------------------------------------------------------------------------------

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
    ) -> SearchResults:
        """The ``k`` messages across every session that best match ``query``, best first.

        ``mode``: ``keyword`` (FTS5 bm25 over the words; ``raw`` takes FTS5 query syntax),
        ``semantic`` (nearest embeddings; needs the database's embedder, by default the one its
        model name says), or ``hybrid`` (both, fused by reciprocal rank). Filters: ``project``
        (of the session owning the message), ``session_id`` (that session's whole transcript,
        inherited messages included), ``role``, ``since`` (message time). A person's words never
        raise a syntax error; a raw query FTS5 rejects raises SearchQueryError. Messages the
        keyword index has not taken in yet (the database is read-only here, or another process
        held the write lock) are counted in the result's ``unindexed``, with ``why``.

        A ``raw`` expression is a filter in every mode: each hit satisfies it (its ``NOT``,
        ``NEAR`` and column filters included), and the semantic ranking orders only the messages
        it matches, by the meaning of the words it asks for (:func:`.fts.raw_words`: operators,
        column names and what ``NOT`` excludes are not embedded). So ``raw`` semantic and hybrid
        searches cannot see messages the keyword index has not taken in yet.

        Messages with a cosine similarity of zero or less to the query are not semantic hits.
        Without ``embedder``, a hybrid search of a database whose recorded model cannot be loaded
        here runs as a keyword search and says so in ``why``; a semantic one raises
        EmbedderUnavailableError. An embedder returning anything but one finite vector of its
        declared dimension raises EmbeddingMismatchError.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be between 1 and {MAX_K}, not {k!r}")
        role_code = None
        if role is not None:
            if role not in ROLE_CODES:
                raise ValueError(f"role must be one of {', '.join(ROLE_CODES)}, not {role!r}")
            role_code = ROLE_CODES[role]
        match = terms = None
        if raw:
            match = raw_expression(query)  # a filter in every mode: see the docstring
        elif mode != "semantic":
            terms = match_terms(query)
            match = " OR ".join(terms) if terms else None
        vector = None
        model = dimension = None
        skipped = None
        if mode != "keyword":
            emb = embedder
            if emb is None:
                try:
                    emb = await self.embedder()
                except EmbedderUnavailableError as exc:
                    if mode != "hybrid":
                        raise
                    skipped = f"semantic search was skipped ({exc}); this was a keyword search"
            if emb is not None:
                model, dimension = emb.model, emb.dimension
                wanted = raw_words(query) if raw else query
                if wanted.strip():
                    vector = await _query_vector(emb, wanted)
        if match is None and vector is None:
            return SearchResults(why=skipped)
        if raw and mode == "semantic" and vector is None:
            # Nothing to embed: only operators, or words the expression excludes. Say so (or what
            # is wrong with the expression) rather than answer "no matches".
            await run(self._conn, search.check_expression, query, match)
            raise SearchQueryError(
                f"raw query {query!r} has no word to search for by meaning (only operators or"
                " excluded words); run it as a keyword search"
            )
        q = Query(
            text=query,
            mode=mode,
            k=k,
            match=match,
            raw=raw,
            terms=terms,
            vector=vector,
            model=model,
            dimension=dimension,
            project=project,
            session_id=session_id,
            role=role_code,
            since_ms=_ms(since),
        )
        results = await run(self._conn, search.search, q)
        if skipped is not None:
            results.why = skipped if results.why is None else f"{results.why}; {skipped}"
        return results

    async def similar(self, session_id: str, position: int, k: int = 10) -> list[SearchHit]:
        """The ``k`` messages nearest in meaning to message ``position`` of a session (itself
        left out; -1 is its last message), from its stored embedding: no embedder needed."""
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be between 1 and {MAX_K}, not {k!r}")
        return await run(self._conn, search.similar, session_id, position, k)

    async def index_status(self) -> IndexStatus:
        """The embedder recorded, how many messages are embedded, and how semantic search runs."""
        return await run(self._conn, search.index_status)

    async def embedding_model(self) -> tuple[str, int] | None:
        """The (model, dimension) this database's embeddings come from; None before the first."""
        settings = await run(self._conn, search.read_settings)
        model, dim = settings.get("embedding_model"), settings.get("embedding_dimension")
        return None if model is None or dim is None else (model, int(dim))

    async def embedder(self, model: str | None = None, *, dimension: int | None = None) -> Embedder:
        """The embedder for ``model``, by default the one this database's embeddings come from.

        ``hashing`` (or its model name, ``axio-hashing-v1``) is the offline
        :class:`HashingEmbedder`, as wide as the database's embeddings (else ``dimension``, else
        384); ``minilm`` is the bundled all-MiniLM-L6-v2 of the ``minilm`` extra; anything else a
        local sentence-transformers model directory or cached name. Loaded once per Database.
        """
        recorded = await self.embedding_model()
        name = model or (recorded[0] if recorded else "hashing")
        if name in ("hashing", HASHING_MODEL):
            if dimension is None:
                dimension = recorded[1] if recorded and recorded[0] == HASHING_MODEL else DEFAULT_DIMENSION
            return HashingEmbedder(dimension)
        name = BUNDLED_MINILM if name == "minilm" else name
        if name not in self._models:
            try:
                self._models[name] = await SentenceTransformerEmbedder.load(
                    None if name == BUNDLED_MINILM else name
                )
            except EmbedderUnavailableError as exc:
                if model is not None:
                    raise
                raise EmbedderUnavailableError(
                    f"this database's embeddings come from {name!r}, which cannot be loaded here: {exc}"
                ) from exc
        return self._models[name]

    async def reindex(
        self,
        embedder: Embedder,
        *,
        batch_size: int = 256,
        progress: ReindexProgress | None = None,
        rebuild: bool = False,
    ) -> ReindexReport:
        """Embed every message that has no embedding yet, then bring the sqlite-vec codes in step.

        Resumable: each batch commits on its own, so an interrupted run loses nothing and the
        next one starts where it stopped. ``rebuild`` first clears every embedding and records
        ``embedder`` as the database's model, in one transaction (switching models), then
        re-embeds. Stale codes (left by a connection without sqlite-vec) are reconciled here.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        model, dim = embedder.model, embedder.dimension
        missing, vec = await run(self._conn, search.reindex_begin, model, dim, rebuild)
        embedded = without_text = scanned = 0
        after = -1
        if progress is not None:
            progress("embedding", 0, missing)
        while True:
            pending = await run(self._conn, search.reindex_read, after, batch_size)
            if pending.scanned == 0:
                break
            batch = await embed_batch(embedder, pending.texts, vec)
            embedded += await run(self._conn, search.reindex_write, model, dim, pending, batch.rows)
            without_text += pending.scanned - len(batch.rows)
            scanned += pending.scanned
            after = pending.last_id
            if progress is not None:
                progress("embedding", min(scanned, missing), max(missing, scanned))
        added = removed = 0
        needed, token = await run(self._conn, search.codes_plan)
        if needed and token is not None:
            orphans, uncoded = await run(self._conn, search.codes_diff)
            removed = await run(self._conn, search.codes_remove, orphans)
            if progress is not None:
                progress("codes", 0, len(uncoded))
            for start in range(0, len(uncoded), batch_size):
                added += await run(self._conn, search.codes_add, uncoded[start : start + batch_size])
                if progress is not None:
                    progress("codes", min(start + batch_size, len(uncoded)), len(uncoded))
            await run(self._conn, search.codes_finish, token)
        settings = await run(self._conn, search.read_settings)
        return ReindexReport(
            model=model,
            dimension=dim,
            embedded=embedded,
            without_text=without_text,
            codes_added=added,
            codes_removed=removed,
            rebuilt=rebuild,
            codes_stale="codes_stale" in settings,
        )

    # -- writing ---------------------------------------------------------------------------------

    async def import_file(
        self,
        path: str | Path,
        *,
        format: Literal["json", "jsonl"] | None = None,
        replace: bool = False,
        new_ids: bool = False,
    ) -> ImportReport:
        """Import a ``json``/``jsonl`` export (format sniffed unless given); see ``admin.import_file``."""
        if replace and new_ids:
            raise ValueError("choose replace or new_ids, not both")
        return await run(self._conn, admin.import_file, Path(path), format, replace, new_ids)

    async def import_axio(self, path: str | Path, *, replace: bool = False) -> AxioImportReport:
        """Migrate an axio-context-sqlite database; idempotent (see :func:`.axio_migration.import_axio`)."""
        return await run(self._conn, axio_migration.import_axio, Path(path), replace)

    async def fork(self, session_id: str, new_id: str | None = None) -> str:
        """Fork a session (copy-on-write, O(1)); returns the new session's id."""
        new = new_id or uuid4().hex
        await run(self._conn, admin.fork, session_id, new)
        return new

    async def delete(self, session_ids: Sequence[str]) -> list[str]:
        """Delete sessions (forks keep their views, unused blobs go); returns those that existed."""
        return await run(self._conn, admin.delete_sessions, list(session_ids))

    async def rename(self, session_id: str, new_id: str) -> None:
        """Give a session a new id; its forks' ``parent_id`` follows."""
        await run(self._conn, admin.rename, session_id, new_id)

    async def set_title(self, session_id: str, title: str | None) -> None:
        """Set, or with None clear, a session's title."""
        await run(self._conn, admin.set_title, session_id, title)

    async def prune(
        self,
        *,
        before: datetime | None = None,
        keep: int | None = None,
        project: str | None = None,
        dry_run: bool = False,
        only: Sequence[str] | None = None,
    ) -> list[SessionInfo]:
        """Delete whole sessions last updated before ``before`` and/or beyond the ``keep`` most
        recently updated (within ``project`` if given); returns them (only lists with ``dry_run``).

        ``only``: of these ids alone, e.g. what a dry run listed and a person confirmed; the
        criteria are checked again as they are deleted, so one appended to meanwhile is kept.
        """
        return await run(self._conn, admin.prune, _ms(before), keep, project, dry_run, only=only)

    async def recompress(self, progress: Progress | None = None) -> RecompressReport:
        """Retrain the compression dictionary on the whole database and rewrite every payload
        with it (see :func:`.admin.recompress`); ``vacuum`` then gives the space back."""
        return await run(self._conn, admin.recompress, progress)

    async def vacuum(self, *, full: bool = False) -> VacuumReport:
        """Reclaim free space and truncate the WAL (see :func:`.admin.vacuum` for which way;
        ``full`` always rebuilds the file)."""
        checkpointer = getattr(self._conn, "checkpointer", None)
        return await run(self._conn, admin.vacuum, self._path, full, checkpointer)

    async def checkpoint(self) -> bool:
        """Copy the WAL into the database file and truncate it, so the file alone holds
        everything (to copy it, or measure it). False when another connection's open read kept
        part of the WAL in use past the busy timeout."""
        if getattr(self._conn, "readonly", False):
            raise ReadOnlyDatabaseError(f"{self._path} is open read-only, and a checkpoint writes to it")
        return await run(self._conn, truncate_wal, getattr(self._conn, "checkpointer", None))

    async def backup(self, dest: str | Path, *, overwrite: bool = False) -> None:
        """Write a consistent copy to ``dest`` with SQLite's backup API, while the database is in use."""
        await run(self._conn, admin.backup, self._path, Path(dest), overwrite)


@asynccontextmanager
async def open_database(
    path: str | Path, *, create: bool = True, busy_timeout: float = 5.0, readonly: bool = False
) -> AsyncIterator[Database]:
    """Open a database file for the duration of an ``async with`` block.

    With ``create=False`` a missing file is a :class:`DatabaseNotFoundError` and nothing is
    created, and a file that cannot be written (a read-only file or folder) is opened read-only
    instead, so reading still works. ``readonly=True`` never writes at all (no schema, no
    upgrade, no journal mode): a missing path or an empty file is a
    :class:`DatabaseNotFoundError` (``EmptyDatabaseError`` for the empty file), "no database
    yet", and nothing is created.
    """
    target = await asyncio.to_thread(lambda: Path(path).expanduser())
    if readonly:
        conn = await connect(target, busy_timeout=busy_timeout, readonly=True)
        try:
            yield Database(conn, target)
        finally:
            await conn.close()
        return
    if not create and not await asyncio.to_thread(target.is_file):
        raise DatabaseNotFoundError(f"no database at {target}")
    try:
        conn = await connect(target, busy_timeout=busy_timeout)
    except (ReadOnlyDatabaseError, DatabaseOpenError):
        if create:
            raise
        conn = await connect(target, busy_timeout=busy_timeout, readonly=True)
    try:
        yield Database(conn, target)
    finally:
        await conn.close()
