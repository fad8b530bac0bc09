"""The search calls of a PostgreSQL database (keyword by tsvector, meaning by pgvector, hybrid by
the shared fusion of :mod:`axio_context.search.fusion`), ``similar``, the index status and the
reindex that embeds its messages: the base class of :class:`~.database.PostgresDatabase`.

The calls take the SQLite ``Database``'s arguments and give its results, so every search command
runs on either backend: ``raw`` takes the same FTS5 syntax (compiled to a ``tsquery`` by
:mod:`.rawquery`), ``session_id`` searches one session's whole transcript (inherited messages
included, hits filed under that session), and the query bounds of
:mod:`axio_context.search.query` hold here too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from axio_context.catalog.expiry_sql import live_session
from axio_context.embeddings import (
    Embedder,
    check_embedder,
)
from axio_context.errors import (
    EmbedderUnavailableError,
    EmbeddingMismatchError,
    MessageNotFoundError,
    NoEmbeddingsError,
    SearchQueryError,
    SessionNotFoundError,
)
from axio_context.expiry import now_ms
from axio_context.messages import SessionInfo
from axio_context.search.calls import MessageSearch, SearchRequest, check_k
from axio_context.search.embedders import choose_embedder
from axio_context.search.fusion import LEXICAL_MODEL_PREFIX, weak_meaning
from axio_context.search.query import raw_words
from axio_context.search.results import ReindexReport, SearchHit, SearchResults
from axio_context.transcript import format_time

from . import lineage, sessions
from . import search as pgsearch
from .connection import Pool, has_vector, translated
from .info import INFO_COLUMNS, info_of
from .rawquery import raw_tsquery
from .sealed import cipher_of
from .status import PostgresIndexStatus
from .writes import stored_text

__all__ = ["SearchCalls"]

#: Messages to embed from which reindex rebuilds the HNSW index rather than insert into it.
BULK_BUILD = 2000

_SEALED_KEYWORD = (
    "keyword search does not run on an encrypted PostgreSQL database (its text is sealed, so no"
    " word is indexed): search by meaning (--mode semantic, after `axio-context reindex`)"
)
_SEALED_HYBRID = "the database is encrypted, so no word is indexed: this was a search by meaning"
_NO_VECTORS = "no message is embedded yet, so this was a keyword search; `axio-context reindex` embeds them"


async def _check_width(conn: Any, emb: Embedder) -> None:
    """Refuse a query embedder whose vectors are not as wide as the stored ones."""
    dim = await conn.fetchval("SELECT value FROM axio_settings WHERE key = 'embedding_dimension'")
    if dim is not None and int(dim) != emb.dimension:
        raise EmbeddingMismatchError(
            f"this database's embeddings have {dim} dimensions; the query embedder"
            f" {emb.model!r} gives {emb.dimension}"
        )


class SearchCalls(MessageSearch):
    """Searching and embedding, on a pool; ``where`` names the server in errors."""

    def __init__(self, pool: Pool, where: str) -> None:
        self._pool = pool
        self._where = where
        self._models: dict[str, Embedder] = {}

    @asynccontextmanager
    async def _tx(self, readonly: bool = False) -> AsyncIterator[Any]:
        async with translated(self._where), self._pool.acquire() as conn:
            if readonly:
                async with conn.transaction(isolation="repeatable_read", readonly=True):
                    yield conn
            else:
                async with conn.transaction():
                    yield conn

    async def info(self, session_id: str) -> SessionInfo:
        """One session's listing entry."""
        async with self._tx(readonly=True) as conn:
            r = await conn.fetchrow(
                f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = $1 AND {live_session(param='$2')}",
                session_id,
                now_ms(),
            )
        if r is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return info_of(r)

    async def _infos(self, session_ids: set[str]) -> dict[str, SessionInfo]:
        """The listing entries of these sessions (those that exist and have not expired: a hit
        in an expired session is left out), in one query."""
        if not session_ids:
            return {}
        async with self._tx(readonly=True) as conn:
            rows = await conn.fetch(
                f"SELECT {INFO_COLUMNS} FROM sessions"
                f" WHERE id = ANY($1::text[]) AND {live_session(param='$2')}",
                sorted(session_ids),
                now_ms(),
            )
        return {info.session_id: info for info in map(info_of, rows)}

    async def embedding_model(self) -> tuple[str, int] | None:
        """The (model, dimension) this database's embeddings come from; None before the first."""
        async with self._tx(readonly=True) as conn:
            settings = dict(await conn.fetch("SELECT key, value FROM axio_settings"))
        model, dim = settings.get("embedding_model"), settings.get("embedding_dimension")
        return None if model is None or dim is None else (model, int(dim))

    async def embedder(self, model: str | None = None, *, dimension: int | None = None) -> Embedder:
        """The embedder for ``model``, by default the one this database's embeddings come from
        (see :func:`axio_context.search.embedders.choose_embedder`); loaded once per database object."""
        return await choose_embedder(model, await self.embedding_model(), self._models, dimension=dimension)

    async def index_status(self) -> PostgresIndexStatus:
        """The embedder recorded, how many messages are embedded, pgvector and its HNSW index."""
        async with self._tx(readonly=True) as conn:
            settings = dict(await conn.fetch("SELECT key, value FROM axio_settings"))
            messages = int(await conn.fetchval("SELECT COUNT(*) FROM messages"))
            ready = await pgsearch.vectors_ready(conn)
            embedded = int(await conn.fetchval("SELECT COUNT(*) FROM embeddings")) if ready else 0
            vector = await has_vector(conn)
            hnsw = bool(await conn.fetchval("SELECT to_regclass('embeddings_hnsw') IS NOT NULL"))
            version = await conn.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        dim = settings.get("embedding_dimension")
        model = settings.get("embedding_model")
        return PostgresIndexStatus(
            model=model,
            dimension=None if dim is None else int(dim),
            messages=messages,
            embedded=embedded,
            vector_extension=vector,
            pgvector_version=version,
            hnsw_index=hnsw,
            ef_search=pgsearch.EF_SEARCH,
            semantic="none" if model is None or embedded == 0 else ("hnsw" if hnsw else "exact"),
        )

    async def reindex(
        self,
        embedder: Embedder,
        *,
        batch_size: int = 256,
        progress: Any = None,
        rebuild: bool = False,
        **_: Any,
    ) -> ReindexReport:
        """Embed every message that has no embedding yet, a batch per transaction, so an
        interrupted run loses nothing and the next one goes on where it stopped. ``rebuild``
        first drops every embedding and the recorded model (one transaction), to re-embed with
        another model or width."""
        import numpy as np

        check_embedder(embedder)
        if rebuild:
            async with self._tx() as conn:
                await pgsearch.require_vector(conn)
                await conn.execute("DROP TABLE IF EXISTS embeddings")
                await conn.execute(
                    "DELETE FROM axio_settings WHERE key IN ('embedding_model', 'embedding_dimension')"
                )
        async with self._tx() as conn:
            await pgsearch.ensure_embeddings(conn, embedder.model, embedder.dimension)
            # Building HNSW over many rows at once is several times faster than inserting them
            # one by one into the graph (pgvector's advice): for a large backlog the index goes
            # and is rebuilt at the end. Meanwhile, or if the run stops, semantic search scans
            # exactly (the same hits, slower) and the next reindex builds the index.
            have = int(await conn.fetchval("SELECT COUNT(*) FROM embeddings"))
            backlog = int(await conn.fetchval("SELECT COUNT(*) FROM messages")) - have
            bulk = backlog >= BULK_BUILD and backlog > have
            if bulk:
                await conn.execute("DROP INDEX IF EXISTS embeddings_hnsw")
        embedded = without_text = 0
        after = (-1, -1)
        while True:
            async with self._tx() as conn:
                rows = await conn.fetch(
                    "SELECT m.seg, m.position, m.body || ' ' || m.tool,"
                    " CASE WHEN m.body = '' AND m.tool = '' THEN m.payload END FROM messages m"
                    " LEFT JOIN embeddings e ON e.seg = m.seg AND e.position = m.position"
                    " WHERE e.seg IS NULL AND (m.seg, m.position) > ($2::bigint, $3::integer)"
                    " ORDER BY m.seg, m.position LIMIT $1",
                    batch_size,
                    *after,
                )
                if not rows:
                    break
                after = (rows[-1][0], rows[-1][1])
                vectors = await embedder.embed([_text_of(r) for r in rows])
                keep = [
                    (r[0], r[1], np.asarray(v, dtype=np.float32))
                    for r, v in zip(rows, vectors, strict=True)
                    if any(v)
                ]
                await conn.executemany(
                    "INSERT INTO embeddings (seg, position, embedding) VALUES ($1, $2, $3)", keep
                )
                embedded += len(keep)
                without_text += len(rows) - len(keep)
        async with self._tx() as conn:
            await pgsearch.create_index(conn)
        if bulk:
            # The visibility map and statistics of a freshly filled table: without them the
            # counts semantic search makes read every heap page, and the planner guesses.
            async with translated(self._where), self._pool.acquire() as conn:
                await conn.execute("VACUUM (ANALYZE) embeddings")
        return ReindexReport(
            model=embedder.model,
            dimension=embedder.dimension,
            embedded=embedded,
            without_text=without_text,
            codes_added=0,
            codes_removed=0,
            rebuilt=rebuild,
            codes_stale=False,
        )

    async def _segments(self, conn: Any, session_id: str) -> list[tuple[int, int, int]]:
        s = await sessions.full_row(conn, session_id)
        return await lineage.chain(conn, s["seg"], s["next_position"])

    async def _search(self, r: SearchRequest) -> SearchResults:
        """Run a checked search (see :meth:`MessageSearch.search`): ``tsvector`` ranking for the
        words, pgvector's nearest for the meaning, or both fused by reciprocal rank."""
        query, k, mode, raw, embedder, model = r.query, r.k, r.mode, r.raw, r.embedder, r.model
        project, session_id, role = r.project, r.session_id, r.role
        tsquery = raw_tsquery(query) if raw else None
        if raw and mode != "keyword" and not raw_words(query).strip() and mode == "semantic":
            raise SearchQueryError(
                f"raw query {query!r} has no word to search for by meaning (only operators or"
                " excluded words); run it as a keyword search"
            )
        if embedder is not None:
            check_embedder(embedder)
        depth = max(k, pgsearch.DEPTH)
        fallback = None
        uncounted = 0
        emb: Embedder | None = None
        qvec: Any = None
        async with self._tx(readonly=True) as conn:
            if cipher_of(conn) is not None:  # no words are indexed: only meaning is searched
                if mode == "keyword":
                    raise SearchQueryError(_SEALED_KEYWORD)
                fallback = _SEALED_HYBRID if mode == "hybrid" else None
                mode = "semantic"
            segments = None if session_id is None else await self._segments(conn, session_id)
            scope = pgsearch.Scope(
                project, role, r.since_ms, segments, tsquery, agent_id=r.agent_id, run_id=r.run_id
            )
            # hybrid's keyword candidates hold any of the terms, as on SQLite: coverage weighs them
            words = pgsearch.terms(query) if mode == "hybrid" and not raw else None
            if mode == "semantic" or words == []:
                kw = []
            else:
                kw = await (
                    pgsearch.keyword(conn, query, depth, scope)
                    if words is None
                    else pgsearch.candidates(conn, query, depth, scope, words)
                )
            sem: list[Any] = []
            if mode != "keyword":
                ready = await pgsearch.vectors_ready(conn)
                if not ready and mode == "semantic":
                    await pgsearch.require_vector(conn)
                    raise EmbedderUnavailableError("no message is embedded yet; `reindex` embeds them")
                emb, fallback = (embedder, fallback) if ready else (None, _NO_VECTORS)
                if ready and emb is None:
                    try:
                        emb = await self.embedder(model)
                    except EmbedderUnavailableError as exc:
                        if mode != "hybrid" or model is not None:
                            raise
                        fallback = f"{exc}; this was a keyword search"
                if emb is not None:
                    check_embedder(emb)
                    await _check_width(conn, emb)
                    wanted = raw_words(query) if raw else query
                    vec = (await emb.embed([wanted]))[0] if wanted.strip() else None
                    if vec is not None and any(vec):
                        import numpy as np

                        qvec = np.asarray(vec, dtype=np.float32)
                        sem = await pgsearch.semantic(conn, qvec, depth, scope)
                    if mode == "semantic":
                        uncounted = await pgsearch.not_embedded(conn)
            nearest = float(sem[0]["score"]) if sem else None
            if mode == "hybrid" and words and not kw and weak_meaning(emb.model if emb else None, nearest):
                # as SQLite: no message holds any of the words and meaning found nothing close,
                # so what it found is withheld and counted (SearchResults.withheld)
                return SearchResults(withheld=len(sem), fallback=fallback)
            # as SQLite: weighted by coverage when the query has words and meaning found something
            shares = await pgsearch.coverage(conn, words, kw) if words and sem else None
            # a meaning-level embedder's cosines are comparable across messages: fused by score
            near = None
            if shares is not None and emb is not None and not emb.model.startswith(LEXICAL_MODEL_PREFIX):
                near = await pgsearch.cosines(conn, qvec, kw, sem)
        return await self._hits(mode, k, kw, sem, session_id, fallback, uncounted, shares, near)

    async def _hits(
        self,
        mode: str,
        k: int,
        kw: list[Any],
        sem: list[Any],
        session_id: str | None,
        fallback: str | None,
        not_embedded: int,
        coverage: dict[int, float] | None = None,
        cosines: dict[tuple[str, int], float] | None = None,
    ) -> SearchResults:
        """Ranked rows made into hits (filed under ``session_id`` when one session was searched);
        hybrid fuses with the SQLite backend's weights when the keyword hits' ``coverage`` is given,
        by score (:func:`~axio_context.search.fusion.blend`) when every candidate's
        ``cosines`` are (a meaning-level embedder), else by rank."""
        by_key = {(r[0], r[1]): r for r in [*sem, *kw]}
        order: list[tuple[tuple[str, int], float, int | None, int | None]]
        if mode == "keyword":
            order = [((r[0], r[1]), float(r[4]), 1, None) for r in kw[:k]]
        elif mode == "semantic":
            order = [((r[0], r[1]), float(r[4]), None, 1) for r in sem[:k]]
        else:
            fused = pgsearch.hybrid_order(kw, sem, k, coverage, cosines)
            order = [(f.key, f.score, f.ranks[0], f.ranks[1]) for f in fused]
        hits: list[SearchHit] = []
        infos = await self._infos({session_id or owner for (owner, _), *_ in order})
        for i, ((owner, pos), score, kr, sr) in enumerate(order):
            r = by_key[(owner, pos)]
            sid = session_id or owner
            if sid not in infos:  # deleted since the search read it
                continue
            snippet, spans = pgsearch.highlights(r["snippet"] or _snippet_of(r))
            info = infos[sid]
            hits.append(
                SearchHit(
                    session_id=sid,
                    position=pos,
                    role=r["role"],
                    snippet=snippet,
                    highlights=spans,
                    score=score,
                    keyword_rank=(i + 1 if mode == "keyword" else kr),
                    semantic_rank=(i + 1 if mode == "semantic" else sr),
                    preview=info.preview,
                    project=info.project,
                    created_at=format_time(r["created_at"]),
                    title=info.title,
                )
            )
        return SearchResults(hits=hits, fallback=fallback, not_embedded=not_embedded)

    async def similar(self, session_id: str, position: int, k: int = 10) -> SearchResults:
        """The ``k`` messages nearest in meaning to message ``position`` of a session (itself
        left out; -1 is its last message), from its stored embedding: no embedder needed."""
        check_k(k)
        async with self._tx(readonly=True) as conn:
            s = await sessions.full_row(conn, session_id)
            n = int(s["next_position"])
            at = position + n if position < 0 else position
            if not 0 <= at < n:
                raise MessageNotFoundError(f"session {session_id!r} has no message {position} (it has {n})")
            seg = next(g for g, lo, hi in await lineage.chain(conn, s["seg"], n) if lo <= at < hi)
            found = None
            if await pgsearch.vectors_ready(conn):
                found = await conn.fetchval(
                    "SELECT embedding FROM embeddings WHERE seg = $1 AND position = $2", seg, at
                )
            if found is None:
                raise NoEmbeddingsError(
                    f"message {at} of session {session_id!r} has no embedding "
                    "(it has no text, or it was stored without an embedder: `reindex` adds them)"
                )
            scope = pgsearch.Scope(exclude=(seg, at))
            sem = await pgsearch.semantic(conn, found, k, scope)
            uncounted = await pgsearch.not_embedded(conn)
        return await self._hits("semantic", k, [], sem, None, None, uncounted)


def _snippet_of(row: Any) -> str:
    """A semantic hit's snippet made from its message (a row with no search text: sealed)."""
    payload = row.get("payload")
    return "" if payload is None else " ".join(t for t in stored_text(payload) if t)[:240]


def _text_of(row: Any) -> str:
    """What a message row's embedding is made of: its search text, or for a row with none (under
    a key none is stored; the payload is read only for such rows) the same text from its payload."""
    return str(row[2]) if row[3] is None else "{} {}".format(*stored_text(row[3]))
