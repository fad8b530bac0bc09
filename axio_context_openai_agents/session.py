"""An openai-agents ``Session`` kept in an axio-context database.

openai-agents calls a session from wherever the agent runs: inside the application's event loop,
from ``Runner.run_sync`` (a thread with a loop of its own), from several threads at once. Every
session on one database (a file, or a ``postgresql://`` URL) shares a :class:`_Hub` that opens
the connection (or pool) once, on a daemon thread running an event loop of its own.

One thread hop per call. An SQLite connection takes calls from any event loop (its worker thread
hands each outcome back to the loop that asked: its ``any_loop``), so a method awaits
the worker directly, in the caller's loop, whichever it is; only the first call of a database
goes through the hub, to open it. An asyncpg pool belongs to one loop, so on PostgreSQL (and
under ``wrap``, whose store may hold loop-bound state) a method submits its work to the hub's
loop and awaits the outcome in the caller's: the hub's loop runs the I/O itself, one hop too.
Constructing a session awaits nothing, so it works anywhere, a running loop included.

Reading gives the stored items back without decoding the native blocks stored beside them (see
``get_view_metadata`` of the SQLite store), with msgspec (:func:`.items.loads`).

Writes (``add_items``, ``pop_item``, ``clear_session``) run to their end once submitted, even
when the caller is cancelled meanwhile (as openai-agents' own SQLite session does): a popped
item is never lost between the database and a cancelled caller.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import inspect
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Generator
from pathlib import Path
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, cast

from agents.items import TResponseInputItem
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from axio_context.backends import backend_for, backend_of, connect, default_location
from axio_context.catalog.expiry_sql import session_ttl
from axio_context.context import ContextStore
from axio_context.errors import DecodeError, StoreClosedError
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.messages import Message
from axio_context.owners import claim_read

from .items import ITEM_KEY, ItemError, item_of, items_of_values, messages_of

__all__ = ["ADAPTER", "SYNCHRONOUS", "AxioContextSession", "Synchronous"]

T = TypeVar("T")

#: The name this adapter records in a session's metadata (see :mod:`axio_context.owners`).
ADAPTER = "openai-agents"

#: SQLite's ``synchronous`` settings a session offers (see docs/openai-agents.md).
Synchronous = Literal["NORMAL", "FULL"]
SYNCHRONOUS: Final = ("NORMAL", "FULL")


class BaseStore(Protocol):
    """What a session needs of the backend's store beneath any wrapper: its metadata (to record
    the adapter that owns it), a bounded read, and ``pop``."""

    async def get_metadata(self) -> dict[str, Any]: ...
    async def set_metadata(self, metadata: dict[str, Any]) -> None: ...
    async def get_history(self, limit: int | None = None) -> list[Message]: ...
    async def pop(self) -> Message | None: ...


_hubs: dict[tuple[str, Synchronous | None], _Hub] = {}
_hubs_lock = threading.Lock()
_shared: tuple[asyncio.AbstractEventLoop, threading.Thread] | None = None
_shared_lock = threading.Lock()  # taken inside _hubs_lock (a hub is made holding it)


def _hub_loop() -> asyncio.AbstractEventLoop:
    """The event loop every hub of this process opens and closes on, on a daemon thread started
    once (again in a forked child, whose copy has no thread): a cold open starts none."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared[1].is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="axio-context session hub", daemon=True)
            thread.start()
            _shared = (loop, thread)
        return _shared[0]


class _Hub:
    """One database's connection (a file's) or pool (a PostgreSQL URL's), opened through the
    registry on the hub thread's event loop (:func:`_hub_loop`)."""

    def __init__(self, path: str, synchronous: Synchronous | None = None) -> None:
        self.path = path
        self.synchronous = synchronous
        #: Its handle takes calls from any event loop (see the module's docstring): known once open.
        self.any_loop = False
        self.refs = 0
        self.loop = _hub_loop()
        self._conn: Any = None  # the backend's connection or pool
        self._opening: asyncio.Lock | None = None

    async def conn(self) -> Any:
        """The connection (or pool), opened on first use (on the hub's loop)."""
        if self._conn is None:
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:
                if self._conn is None:
                    options = {} if self.synchronous is None else {"synchronous": self.synchronous}
                    conn = await connect(self.path, **options)
                    self.any_loop = bool(getattr(conn, "any_loop", False))
                    self._conn = conn
        return self._conn

    @property
    def opened(self) -> Any:
        """The connection (or pool) once open, else None."""
        return self._conn

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Close the connection (from any thread but the hub's)."""

        async def close() -> None:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None

        self.submit(close()).result()


def _acquire(path: str, synchronous: Synchronous | None) -> _Hub:
    with _hubs_lock:
        hub = _hubs.get((path, synchronous))
        if hub is None:
            hub = _hubs[path, synchronous] = _Hub(path, synchronous)
        hub.refs += 1
        return hub


def _release(hub: _Hub) -> None:
    with _hubs_lock:
        hub.refs -= 1
        if hub.refs > 0:
            return
        del _hubs[hub.path, hub.synchronous]
    hub.stop()


@atexit.register
def _close_all() -> None:  # sessions never closed: their connections still close cleanly
    with _hubs_lock:
        hubs = list(_hubs.values())
        _hubs.clear()
    for hub in hubs:
        hub.stop()
    if _shared is not None and _shared[1].is_alive():
        loop, thread = _shared
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


class AxioContextSession(SessionABC):
    """openai-agents' ``Session`` protocol over an axio-context database, SQLite or PostgreSQL.

    ``db_path``: the database file or a URL of any registered backend (``postgresql://``: the
    ``postgres`` extra), opened through the registry; None: the default one the ``axio-context``
    command line uses (``$AXIO_CONTEXT_DB``, which may be a URL); ``":memory:"``: a private
    temporary file, removed on :meth:`close`. An unknown scheme or a missing extra is a
    :class:`~axio_context.backends.BackendMissingError` here, not on first use. ``project``: the
    session's project (None: the current directory, as :class:`SQLiteContextStore`).
    ``session_settings``: openai-agents' settings (its ``limit`` is the default of
    :meth:`get_items`). ``wrap``: wraps the session's store, e.g. ``lambda s:
    AutoCompactStore(s, summarizer, max_tokens=...)`` so reads give the compacted view.
    ``synchronous`` (SQLite only): ``"NORMAL"`` (None, the default: a committed turn survives a
    crash of the process, a power loss may lose the last ones) or ``"FULL"`` (every commit
    synced to disk, as openai-agents' ``SQLiteSession`` by default); see docs/openai-agents.md.
    ``ttl``: seconds after its last write that the session expires (or a
    :class:`~axio_context.expiry.TTLConfig`, which may also refresh on read), as openai-agents'
    ``RedisSession(ttl=...)``: an expired session reads as empty and the next write starts it
    afresh (see docs/expiry.md).

    Items come back exactly as they were added (see :mod:`.items`); each is also stored as native
    blocks. A session id another adapter (or plain axio code) writes is a
    :class:`~axio_context.errors.SessionOwnerError`, never a mixed transcript.
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        db_path: str | Path | None = None,
        *,
        project: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        wrap: Callable[[ContextStore], ContextStore] | None = None,
        synchronous: Synchronous | None = None,
        ttl: float | TTLConfig | None = None,
    ) -> None:
        self.session_id = session_id
        self._ttl = session_ttl(ttl)  # a bad TTL: one line now, not on first use
        self.session_settings = (
            SessionSettings() if session_settings is None else coerce_session_settings(session_settings)
        )
        self._project = project
        self._wrap = wrap
        self._tmpdir: str | None = None
        if str(db_path) == ":memory:":
            self._tmpdir = tempfile.mkdtemp(prefix="axio-context-session-")
            db_path = os.path.join(self._tmpdir, "session.db")
        where = default_location() if db_path is None else db_path
        backend = backend_for(where)  # an unknown scheme or a missing extra: one line now
        if synchronous is not None:
            if synchronous not in SYNCHRONOUS:
                raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
            if "synchronous" not in inspect.signature(backend.connect).parameters:
                raise ValueError(f"synchronous is SQLite's setting; {backend.name} has none")
        # one hub per database: a URL as given (sqlite:// too), a path made absolute
        path = where if isinstance(where, str) and "://" in where else os.path.abspath(where)
        self._hub: _Hub | None = _acquire(path, synchronous)
        self._store: ContextStore | None = None  # made on the hub's loop
        self._base: BaseStore | None = None  # the backend's store under ``wrap``
        self._owned = False

    # -- the Session protocol ------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history's items, oldest first; with a limit (``limit``, else
        ``session_settings.limit``) its last ``limit`` items, reading only those rows. As
        openai-agents' SQLite session: 0 gives none, a negative limit all."""
        n = resolve_session_limit(limit, self.session_settings)
        if n == 0:
            self._live()
            return []
        return await self._call(self._get_items, None if n is None or n < 0 else n)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in one transaction: all of them, or (an item that cannot be stored:
        :class:`~.items.ItemError` naming it) none."""
        self._live()
        # The store's append checks every message before writing anything; only a batch it
        # refuses (a native block the codec cannot keep) is made again, checked one by one.
        messages = messages_of(items, checked=False)
        if messages:
            try:
                await self._mutate(self._add, messages)
            except ItemError:
                raise
            except DecodeError:
                await self._mutate(self._add, messages_of(items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item; None when the session is empty."""
        return await self._mutate(self._pop)

    async def clear_session(self) -> None:
        """Remove every item of this session."""
        await self._mutate(self._clear)

    def close(self) -> None:
        """Release the database (closed when its last session is); later calls raise."""
        hub, self._hub = self._hub, None
        if hub is not None:
            _release(hub)
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    # -- what runs on the caller's loop (SQLite) or the hub's (see the module's docstring) ----

    async def _session_store(self) -> ContextStore:
        if self._store is None:
            assert self._hub is not None
            conn = await self._hub.conn()
            if self._store is None:  # checked again after the await: made once, even when raced
                ttl = None if self._ttl is NO_TTL else self._ttl
                store = backend_of(conn).context_store(conn, self.session_id, self._project, ttl=ttl)
                # every backend's session store keeps metadata and pops (SQLite's, PostgreSQL's)
                self._base = cast(BaseStore, store)
                self._store = self._wrap(store) if self._wrap is not None else store
        return self._store

    async def _owner_checked(self, *, writing: bool) -> ContextStore:
        store = await self._session_store()
        if not self._owned:
            base = self._based()
            # whether it holds messages matters only to a session no adapter claimed yet: a
            # cold open of this adapter's session is one call to the store, not two
            wanted = await claim_read(
                self.session_id, ADAPTER, base.get_metadata, lambda: base.get_history(limit=1)
            )
            # a session that expires is checked on every call: after expiry it starts afresh
            keep = self._ttl is NO_TTL
            if wanted is None:
                self._owned = keep
            elif writing:
                await base.set_metadata(wanted)
                self._owned = keep
        return store

    async def _get_items(self, limit: int | None) -> list[TResponseInputItem]:
        store = await self._owner_checked(writing=False)
        if self._wrap is None:  # not wrapped: the items alone, when the store can read them so
            read = getattr(store, "get_view_metadata", None)
            if read is not None:
                return items_of_values(await read(ITEM_KEY, limit))  # type: ignore[return-value]
        history = await (store.get_history() if limit is None else store.get_tail(limit))
        return [item_of(m) for m in history]  # type: ignore[misc]

    async def _add(self, messages: list[Any]) -> None:
        store = await self._owner_checked(writing=True)
        await store.append_many(messages)

    async def _pop(self) -> TResponseInputItem | None:
        store = await self._owner_checked(writing=False)
        pop = getattr(store, "pop", None) or self._based().pop
        popped = await pop()
        return None if popped is None else item_of(popped)  # type: ignore[return-value]

    async def _clear(self) -> None:
        store = await self._owner_checked(writing=False)
        await store.clear()

    def _based(self) -> BaseStore:
        assert self._base is not None, "made with the store"
        return self._base

    # -- crossing to the hub ---------------------------------------------------------------------

    def _live(self) -> _Hub:
        if self._hub is None:
            raise StoreClosedError(f"{type(self).__name__} is closed (session {self.session_id!r})")
        return self._hub

    def _direct(self, hub: _Hub) -> bool:
        """Whether calls go straight to the connection from the caller's loop (see the module's
        docstring): an SQLite database, no ``wrap``."""
        return hub.any_loop and self._wrap is None

    async def _opened(self, hub: _Hub) -> None:
        if hub.opened is None:  # the database's first call: the hub opens it, once
            await asyncio.wrap_future(hub.submit(hub.conn()))

    async def _call(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        hub = self._live()
        await self._opened(hub)
        if self._direct(hub):
            return await fn(*args)
        return await asyncio.wrap_future(hub.submit(fn(*args)))

    async def _mutate(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Like :meth:`_call`, but the write goes on when the caller is cancelled, and the
        cancellation is raised once it is done (its outcome known, never half-known).

        Direct calls run here until they first wait: a write that runs inline on this thread
        (SQLite at NORMAL with the worker idle: the usual turn, the usual pop) ends without a task
        and the loop turns one costs; only one that waits goes on in a task, shielded."""
        hub = self._live()
        future: asyncio.Future[T]
        await self._opened(hub)
        if self._direct(hub):
            coro = fn(*args)
            try:
                waiting = coro.send(None)  # cannot be cancelled before it first waits
            except StopIteration as done:
                return cast(T, done.value)
            future = asyncio.ensure_future(_Resumed(coro, waiting).run())
        else:
            future = asyncio.wrap_future(hub.submit(fn(*args)))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            await asyncio.wait({future})
            raise


class _Resumed(Generic[T]):
    """The rest of a coroutine run by hand (``send(None)``) up to its first wait, as an awaitable
    a task can run: what it waits on goes to the task and the outcome back, as ``await`` would
    pass them."""

    __slots__ = ("_coro", "_waiting")

    def __init__(self, coro: Coroutine[Any, Any, T], waiting: Any) -> None:
        self._coro = coro
        self._waiting = waiting

    def __await__(self) -> Generator[Any, Any, T]:
        waiting = self._waiting
        while True:
            try:
                sent = yield waiting
            except BaseException as exc:  # a cancellation (or error) the task throws in
                try:
                    waiting = self._coro.throw(exc)
                except StopIteration as done:
                    return cast(T, done.value)
                continue
            try:
                waiting = self._coro.send(sent)
            except StopIteration as done:
                return cast(T, done.value)

    async def run(self) -> T:
        return await self
