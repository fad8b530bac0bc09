"""A whole PostgreSQL database: the multi-session calls the command line makes, as
:class:`axio_context.backends.OpenDatabase` names them, so every command runs on either backend.

Calls that only make sense for an SQLite file (vacuum, backup, recompress, check, checkpoint,
the quarantine, importing an axio file) are not here: ``capabilities`` is empty, and
:meth:`PostgresDatabase.instead` says in one line what to use on PostgreSQL
(:func:`axio_context.backends.require` raises it as :class:`UnsupportedOnPostgresError`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal
from uuid import uuid4

from axio_context.backends.protocol import Capability, StoredStateView
from axio_context.catalog import CatalogCalls
from axio_context.catalog.calls import PruneRule
from axio_context.errors import SessionExistsError, SessionNotFoundError
from axio_context.messages import SessionInfo
from axio_context.naming import RANDOM_ID, SHORT_ID, project_forms, unique_prefix
from axio_context.transcript.exporting import ExportSource
from axio_context.transcript.reports import ImportReport
from axio_context.views import SessionSort, SessionView, sort_column

from . import importing, pools, runs, sessions, state, tree, upkeep, writes
from .browsing import PostgresBrowser
from .connection import Pool, connect, redacted, translated
from .copying.sides import PostgresSide
from .memory import PostgresMemoryStores
from .runner import PostgresRunner
from .searching import SearchCalls
from .store import PostgresContextStore
from .upkeep import PostgresStats
from .usage import PostgresUsageRecorder

if TYPE_CHECKING:
    from axio_context.pools.sql import PoolInfo, PoolView

__all__ = ["PostgresDatabase", "open_browser", "open_database"]


class PostgresDatabase(SearchCalls, CatalogCalls):
    """Every session of one PostgreSQL database: list, show, export, import, fork, search."""

    def __init__(self, pool: Pool, url: str) -> None:
        super().__init__(pool, f"PostgreSQL at {redacted(url)}")
        self._url = url

    @property
    def path(self) -> str:
        """The database's URL, its password hidden (what messages name)."""
        return redacted(self._url)

    @property
    def pool(self) -> Pool:
        """The pool used (owned by whoever opened it)."""
        return self._pool

    # -- finding sessions ------------------------------------------------------------------------

    async def resolve(self, prefix: str) -> str:
        """The session id equal to ``prefix``, or the only one starting with it (like git)."""
        async with self._tx(readonly=True) as conn:
            return await sessions.resolve(conn, prefix)

    async def latest(self, sort: SessionSort = "created") -> str:
        """The newest session's id by ``sort`` (SessionNotFoundError when there is none)."""
        order = sort_column(sort)
        async with self._tx(readonly=True) as conn:
            # A subagent's session (owner_id set) is part of its owner's: "the newest" is never one.
            found = await conn.fetchval(
                f"SELECT id FROM sessions WHERE owner_id IS NULL ORDER BY {order} DESC, sid DESC LIMIT 1"
            )
        if found is None:
            raise SessionNotFoundError("the database holds no sessions yet")
        return str(found)

    async def complete(self, prefix: str, limit: int = 50) -> list[str]:
        """Session ids starting with ``prefix``, for shell completion."""
        async with self._tx(readonly=True) as conn:
            rows = await conn.fetch(
                "SELECT id FROM sessions WHERE starts_with(id, $1)"
                " ORDER BY created_at DESC, sid DESC LIMIT $2",
                prefix,
                limit,
            )
        return [r[0] for r in rows]

    async def short_ids(self, ids: Iterable[str | None]) -> dict[str, str]:
        """How each id is shown to people: in full, but a long random one cut to the shortest
        prefix (12 characters or more) that finds only it, as on every backend
        (:func:`axio_context.naming.unique_prefix`); one query for every random id."""
        wanted = list(dict.fromkeys(i for i in ids if i is not None))
        shown = {i: i for i in wanted}
        random = [i for i in wanted if RANDOM_ID.fullmatch(i)]
        if not random:
            return shown
        async with self._tx(readonly=True) as conn:
            rows = await conn.fetch(
                "SELECT w.id, s.id FROM unnest($1::text[]) AS w(id)"
                " JOIN sessions s ON left(s.id, $2) = left(w.id, $2) AND s.id <> w.id",
                random,
                SHORT_ID,
            )
        near: dict[str, list[str]] = {}
        for mine, other in rows:
            near.setdefault(mine, []).append(other)
        for i in random:
            shown[i] = unique_prefix(i, near.get(i, ()))
        return shown

    async def stored_project(self, project: str | None) -> str | None:
        """The project as stored that ``project`` names (a path's absolute or resolved form)."""
        if project is None:
            return None
        forms = project_forms(project)
        async with self._tx(readonly=True) as conn:
            for form in forms if len(forms) > 1 else ():
                if await conn.fetchval("SELECT 1 FROM sessions WHERE project = $1 LIMIT 1", form):
                    return form
        return project

    # -- reading ---------------------------------------------------------------------------------

    async def show(self, session_id: str, *, full: bool = False, run_id: str | None = None) -> SessionView:
        """A session's fields and its model view, or with ``full`` its whole transcript
        (``run_id``: only that run's messages; ``clear_run``'s are never shown)."""
        async with self._tx(readonly=True) as conn:
            return await runs.show(conn, session_id, full, run_id)

    async def agents_of(self, session_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``session id -> (agent_id, thread_id)`` for the agent sessions among ``session_ids``."""
        async with self._tx(readonly=True) as conn:
            return await runs.agents_of(conn, session_ids)

    async def agent_session(self, agent_id: str, thread_id: str) -> str:
        """The id of ``agent_id``'s session in thread ``thread_id`` (SessionNotFoundError if none)."""
        async with self._tx(readonly=True) as conn:
            return await runs.agent_session(conn, agent_id, thread_id)

    # -- writing ---------------------------------------------------------------------------------

    async def import_file(
        self,
        path: str | Path,
        *,
        format: Literal["json", "jsonl"] | None = None,
        replace: bool = False,
        new_ids: bool = False,
        skip_existing: bool = False,
    ) -> ImportReport:
        """Import a json/jsonl export: all of it is validated first, then one transaction per
        session (:func:`axio_context_postgres.importing.import_file`). Existing ids are refused
        unless ``replace``, ``new_ids`` or ``skip_existing`` (left as they are: what makes a copy
        resumable)."""
        return await importing.import_file(
            self._tx, path, format=format, replace=replace, new_ids=new_ids, skip_existing=skip_existing
        )

    async def fork(self, session_id: str, new_id: str | None = None) -> str:
        """Fork a session (copy-on-write, O(1)); returns the new session's id."""
        new = new_id or uuid4().hex
        async with self._tx() as conn:
            s = await sessions.full_row(conn, session_id)
            if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", new):
                raise SessionExistsError(f"session {new!r} already exists")
            await writes.fork(conn, session_id, s["project"], new)
        return new

    async def delete(self, session_ids: Sequence[str]) -> list[str]:
        """Delete sessions (forks keep their views); returns those that existed."""
        gone: list[str] = []
        async with self._tx() as conn:
            for i in session_ids:
                if await writes.delete_session(conn, i):
                    gone.append(i)
        return gone

    async def rename(self, session_id: str, new_id: str) -> None:
        """Give a session a new id; its forks' ``parent_id`` follows."""
        if not new_id:
            raise ValueError("the new id must not be empty")
        async with self._tx() as conn:
            await sessions.full_row(conn, session_id)
            if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", new_id):
                raise SessionExistsError(f"session {new_id!r} already exists")
            await conn.execute("UPDATE sessions SET id = $2 WHERE id = $1", session_id, new_id)
            await conn.execute("UPDATE sessions SET parent_id = $2 WHERE parent_id = $1", session_id, new_id)
            await conn.execute("UPDATE segments SET owner = $2 WHERE owner = $1", session_id, new_id)

    async def set_title(self, session_id: str, title: str | None) -> None:
        """Set, or with None clear, a session's title."""
        async with self._tx() as conn:
            await sessions.full_row(conn, session_id)
            await conn.execute("UPDATE sessions SET title = $2 WHERE id = $1", session_id, title)

    async def load_stored(self, session_id: str) -> StoredStateView | None:
        """The agent state saved with a session, as stored (the ``state`` command's view)."""
        return await state.load_stored(PostgresContextStore(self._pool, session_id, project=""))

    def memory_stores(self) -> PostgresMemoryStores:
        """The memory stores (vectors, blobs, graph, tasks) in this database, on its pool."""
        return PostgresMemoryStores(self._pool)

    async def memory_stats(self) -> None:
        """Not measured on PostgreSQL (``stats`` shows each table's size instead)."""
        return None

    def usage_recorder(self) -> PostgresUsageRecorder:
        """The usage recorder of this database (rows, rollups, session token totals), on its pool."""
        return PostgresUsageRecorder(self._pool)

    # -- looking after it -----------------------------------------------------------------------

    async def stats(self) -> PostgresStats:
        """Totals, per project, and the bytes each table takes (one snapshot)."""
        async with self._tx(readonly=True) as conn:
            return await upkeep.stats(conn)

    async def _prune(self, rule: PruneRule) -> list[SessionInfo]:
        async with self._tx(readonly=rule.dry_run) as conn:
            report = await upkeep.prune(conn, *rule)
        return report.sessions

    async def purge_hidden(self) -> int:
        """Empty the rows ``clear_run`` hid that no other session reads (their text, embedding
        and run tag; the row keeps its position): SQLite's ``vacuum`` does it there. Returns how
        many rows were emptied."""
        async with self._tx() as conn:
            return await runs.purge_hidden(conn)

    # -- what it hands out --------------------------------------------------------------------

    @property
    def capabilities(self) -> frozenset[Capability]:
        """None of the SQLite file's upkeep calls (see :meth:`instead`)."""
        return frozenset()

    def instead(self, capability: Capability) -> str:
        """What to use on PostgreSQL instead of an SQLite file's call."""
        return f"{capability} is an SQLite-file operation; on PostgreSQL {_INSTEAD[capability]}"

    def store(self, session_id: str, project: str | None = None) -> PostgresContextStore:
        """One session of this database, on its pool."""
        return PostgresContextStore(self._pool, session_id, project)

    def _catalog_runner(self) -> PostgresRunner:
        return PostgresRunner(self._pool, tree.WHERE)

    def _export_source(self) -> ExportSource:
        return sessions.POSTGRES_EXPORT

    async def list_pools(self, kind: str | None = None) -> list[PoolInfo]:
        """Every context queue and pool (or only ``kind``: 'queue' or 'pool'), by name."""
        return await pools.list_pools(self._pool, kind)

    async def show_pool(self, name: str, *, limit: int) -> PoolView:
        """The queue or pool ``name`` with its first ``limit`` items."""
        view: PoolView = await pools.show_pool(self._pool, name, limit=limit)
        return view

    def layers(self) -> PostgresSide:
        """The layers beside the sessions, as ``copy`` dumps and loads them."""
        return PostgresSide(self._pool)

    def browser(self) -> PostgresBrowser:
        """This database as the browser and ``show --follow`` read it."""
        return PostgresBrowser(self)


#: What to run on PostgreSQL instead of each SQLite-file operation.
_INSTEAD: Final = {
    Capability.VACUUM: "autovacuum runs, or run VACUUM on the server (prune also empties cleared runs)",
    Capability.RECOMPRESS: "the server compresses large values itself (TOAST): nothing to run",
    Capability.CHECKPOINT: "the server checkpoints its own WAL (CHECKPOINT on the server forces one)",
    Capability.BACKUP: "run pg_dump (or pg_basebackup) on the server",
    Capability.CHECK: "run the server's amcheck (rows are checked as they are written)",
    Capability.IMPORT_AXIO: "import into a SQLite file, then `axio-context copy FILE URL`",
}


@asynccontextmanager
async def open_database(
    url: str, key: bytes | str | None = None, **_: Any
) -> AsyncIterator[PostgresDatabase]:
    """Open a PostgreSQL database (creating or upgrading the schema) for an ``async with`` block;
    ``key``: the key its data is sealed under (None: the environment's, if any)."""
    pool = await connect(url, min_size=1, max_size=4, key=key)
    try:
        yield PostgresDatabase(pool, url)
    finally:
        await pool.close()


@asynccontextmanager
async def open_browser(url: str) -> AsyncIterator[PostgresBrowser]:
    """Open the PostgreSQL database at ``url`` for a browser (``async with``)."""
    async with open_database(url) as db:
        yield PostgresBrowser(db)


async def describe(url: str) -> dict[str, object]:
    """What ``axio-context info`` shows for a PostgreSQL database: where, versions, pgvector."""
    from .connection import check_url, has_vector
    from .schema import SCHEMA_VERSION, current_version

    check_url(url)
    import asyncpg

    async with translated(f"PostgreSQL at {redacted(url)}"):
        conn = await asyncpg.connect(url, timeout=10)
        try:
            return {
                "database": redacted(url),
                "backend": "postgresql",
                "server_version": await conn.fetchval("SHOW server_version"),
                "schema_version": await current_version(conn) or None,
                "supported_schema_version": SCHEMA_VERSION,
                "vector_extension": await has_vector(conn),
            }
        finally:
            await conn.close()


if TYPE_CHECKING:  # mypy checks the database class against the protocol

    def _conforms(db: PostgresDatabase) -> None:
        from axio_context.backends import OpenDatabase

        _database: OpenDatabase = db
