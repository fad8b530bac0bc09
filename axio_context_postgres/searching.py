"""The search calls of a PostgreSQL database (keyword by tsvector, meaning by pgvector, hybrid by
the SQLite backend's rank fusion) and the reindex that embeds its messages: the base class of
:class:`~.database.PostgresDatabase`, as :class:`axio_context_sqlite.admin.jobs.DatabaseJobs`
is of the SQLite ``Database``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from axio_context.embeddings import Embedder, HashingEmbedder, check_embedder
from axio_context.errors import EmbedderUnavailableError, SessionNotFoundError
from axio_context.messages import SessionInfo
from axio_context.transcript import (
    format_time,
)
from axio_context_sqlite.admin.jobs import ms
from axio_context_sqlite.search.hits import SearchHit, SearchResults
from axio_context_sqlite.search.ranking import reciprocal_rank_fusion
from axio_context_sqlite.search.reindex import ReindexReport

from . import search as pgsearch
from .connection import Pool, translated
from .errors import UnsupportedOnPostgresError
from .listing import INFO_COLUMNS, info_of

__all__ = ["SearchCalls"]


class SearchCalls:
    """Searching and embedding, on a pool; ``where`` names the server in errors."""

    def __init__(self, pool: Pool, where: str) -> None:
        self._pool = pool
        self._where = where

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
            r = await conn.fetchrow(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = $1", session_id)
        if r is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return info_of(r)

    async def embedding_model(self) -> tuple[str, int] | None:
        """The (model, dimension) this database's embeddings come from; None before the first."""
        async with self._tx(readonly=True) as conn:
            settings = dict(await conn.fetch("SELECT key, value FROM axio_settings"))
        model, dim = settings.get("embedding_model"), settings.get("embedding_dimension")
        return None if model is None or dim is None else (model, int(dim))

    async def embedder(self, model: str | None = None, *, dimension: int | None = None) -> Embedder:
        """The hashing embedder (offline), as wide as the database's embeddings; other models
        are loaded as the SQLite backend loads them."""
        recorded = await self.embedding_model()
        name = model or (recorded[0] if recorded else "hashing")
        if name in ("hashing", HashingEmbedder().model):
            return HashingEmbedder(dimension or (recorded[1] if recorded else 384))
        raise EmbedderUnavailableError(
            f"embedder {name!r} is not available for PostgreSQL from the command line;"
            " pass one to the library"
        )

    async def reindex(
        self, embedder: Embedder, *, batch_size: int = 256, progress: Any = None, **_: Any
    ) -> ReindexReport:
        """Embed every message that has no embedding yet, a batch per transaction, so an
        interrupted run loses nothing and the next one goes on where it stopped."""
        import numpy as np

        check_embedder(embedder)
        async with self._tx() as conn:
            await pgsearch.ensure_embeddings(conn, embedder.model, embedder.dimension)
        embedded = without_text = 0
        after = (-1, -1)
        while True:
            async with self._tx() as conn:
                rows = await conn.fetch(
                    "SELECT m.seg, m.position, m.body || ' ' || m.tool FROM messages m"
                    " LEFT JOIN embeddings e ON e.seg = m.seg AND e.position = m.position"
                    " WHERE e.seg IS NULL AND (m.seg, m.position) > ($2::bigint, $3::integer)"
                    " ORDER BY m.seg, m.position LIMIT $1",
                    batch_size,
                    *after,
                )
                if not rows:
                    break
                after = (rows[-1][0], rows[-1][1])
                vectors = await embedder.embed([r[2] for r in rows])
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
        return ReindexReport(
            model=embedder.model,
            dimension=embedder.dimension,
            embedded=embedded,
            without_text=without_text,
            codes_added=0,
            codes_removed=0,
            rebuilt=False,
            codes_stale=False,
        )

    async def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: str = "hybrid",
        project: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        raw: bool = False,
        embedder: Embedder | None = None,
        model: str | None = None,
    ) -> SearchResults:
        """The ``k`` messages that best match ``query``: keyword, semantic or hybrid (RRF)."""
        if mode not in ("keyword", "semantic", "hybrid"):
            raise ValueError(f"mode must be one of keyword, semantic, hybrid, not {mode!r}")
        if raw:
            raise UnsupportedOnPostgresError("raw FTS5 queries are SQLite's; on PostgreSQL type plain words")
        if session_id is not None:
            raise UnsupportedOnPostgresError("searching one session is not supported on PostgreSQL yet")
        since_ms = ms(since)
        depth = max(k, pgsearch.DEPTH)
        fallback = None
        async with self._tx(readonly=True) as conn:
            kw = (
                []
                if mode == "semantic"
                else await pgsearch.keyword(conn, query, depth, project, role, since_ms)
            )
            sem: list[Any] = []
            if mode != "keyword":
                ready = await pgsearch.vectors_ready(conn)
                if not ready and mode == "semantic":
                    await pgsearch.require_vector(conn)
                    raise EmbedderUnavailableError("no message is embedded yet; run `axio-context reindex`")
                if ready:
                    emb = embedder or await self.embedder(model)
                    [vec] = await emb.embed([query])
                    if any(vec):
                        import numpy as np

                        sem = await pgsearch.semantic(
                            conn, np.asarray(vec, dtype=np.float32), depth, project, role, since_ms
                        )
                else:
                    fallback = "no message is embedded yet, so this was a keyword search"
        by_key = {(r[0], r[1]): r for r in [*sem, *kw]}
        order: list[tuple[tuple[str, int], float, int | None, int | None]]
        if mode == "keyword":
            order = [((r[0], r[1]), float(r[4]), 1, None) for r in kw[:k]]
        elif mode == "semantic":
            order = [((r[0], r[1]), float(r[4]), None, 1) for r in sem[:k]]
        else:
            fused = reciprocal_rank_fusion([[(r[0], r[1]) for r in kw], [(r[0], r[1]) for r in sem]], limit=k)
            order = [(f.key, f.score, f.ranks[0], f.ranks[1]) for f in fused]
        hits: list[SearchHit] = []
        infos: dict[str, SessionInfo] = {}
        for i, ((sid, pos), score, kr, sr) in enumerate(order):
            r = by_key[(sid, pos)]
            if sid not in infos:
                try:
                    infos[sid] = await self.info(sid)
                except SessionNotFoundError:
                    continue
            snippet, spans = pgsearch.highlights(r["snippet"])
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
        return SearchResults(hits=hits, fallback=fallback)
