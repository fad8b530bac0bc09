"""Which backend opens a database, by where it is: a path (or ``sqlite://PATH``) opens SQLite,
``postgresql://``/``postgres://`` PostgreSQL, any other ``scheme://`` the backend registered
under that scheme in the ``axio_context.backends`` entry point group (as SQLAlchemy opens a URL
through its dialects).

A backend is loaded only when a location of its scheme is opened (an entry point is imported
on first use), so the core imports no backend, and a PostgreSQL user never loads the SQLite
backend's internals. A backend whose package or driver is not installed is a one-line
:class:`BackendMissingError` naming the extra to install.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..context import ContextStore
from ..conversation_log import ConversationLog
from ..errors import DatabaseOpenError
from ..tokens import TokenCounter
from .protocol import OpenDatabase

if TYPE_CHECKING:
    from ..testing.factories import ContractFactories
    from ..turns_sql import TurnIndexCalls
    from ..usage_limits import UsageRecorder

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_VAR",
    "Backend",
    "BackendMissingError",
    "Where",
    "backend_for",
    "backend_of",
    "connect",
    "default_location",
    "is_url",
    "open_database",
    "registered_schemes",
    "scheme_of",
]

#: The entry point group a backend registers under, one entry per URL scheme it opens.
ENTRY_POINT_GROUP: Final = "axio_context.backends"
#: The environment variable naming the database used when none is given (a path or a URL).
ENV_VAR: Final = "AXIO_CONTEXT_DB"

#: A database's location: a file path, or a URL.
Where = str | os.PathLike[str]

#: The built-in backends, used where the package's entry points are not installed (a source
#: checkout on ``sys.path``); pyproject.toml declares the same under :data:`ENTRY_POINT_GROUP`.
_BUILT_IN: Final = {
    "sqlite": "axio_context_sqlite.backend:BACKEND",
    "postgresql": "axio_context_postgres.backend:BACKEND",
    "postgres": "axio_context_postgres.backend:BACKEND",
}
#: The extra that installs a built-in backend's driver.
_EXTRAS: Final = {"postgresql": "postgres", "postgres": "postgres"}

_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class BackendMissingError(DatabaseOpenError):
    """No backend opens this location: its scheme is unknown, or its package is not installed."""


class Backend(Protocol):
    """What a backend registers: how to open a location of its schemes, and the handles
    (a connection, a pool) its stores take, for the bridges."""

    #: Its name (``sqlite``, ``postgresql``).
    name: str

    def open_database(
        self,
        where: Where | None,
        *,
        create: bool = True,
        readonly: bool = False,
        busy_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[OpenDatabase]:
        """An ``async with`` giving the whole :class:`OpenDatabase` at ``where`` (None: the default
        one); ``create=False``: it must exist; ``readonly``: nothing is written;
        ``busy_timeout``: seconds a call waits for another writer's lock (None: the backend's)."""
        ...

    async def connect(self, where: Where) -> Any:
        """An open handle (connection or pool) on ``where``, which the caller closes."""
        ...

    def owns(self, handle: object) -> bool:
        """Whether ``handle`` is one of this backend's connections or pools."""
        ...

    def context_store(
        self, handle: Any, session_id: str, project: str | None = None, *, ttl: Any = None
    ) -> ContextStore:
        """One session on ``handle``; ``ttl``: its expiry (seconds or a
        :class:`~axio_context.expiry.TTLConfig`; None: never)."""
        ...

    def conversation_log(
        self, handle: Any, *, adapter: str, project: str | None, token_counter: TokenCounter | None
    ) -> ConversationLog:
        """A framework's conversation log on ``handle``."""
        ...

    def usage_recorder(self, handle: Any) -> UsageRecorder:
        """The usage recorder (per-request rows) on ``handle``."""
        ...

    def turn_index(self, handle: Any, *, project: str | None = None) -> TurnIndexCalls[Any]:
        """The user turns of sessions on ``handle`` (:mod:`axio_context.turns_sql`)."""
        ...

    async def describe(self, where: Where) -> dict[str, object]:
        """What ``axio-context info`` shows of the database at ``where``."""
        ...

    def contract_factories(self, handle: Any, where: Where) -> ContractFactories:
        """The shipped contract suites' factories on ``handle`` (open on the fresh database at
        ``where``), for :mod:`axio_context.testing.backends`; imported only by that fixture."""
        ...


def scheme_of(where: Where | None) -> str:
    """The backend scheme of a location: a URL's scheme (lower case), ``sqlite`` for a path."""
    if where is None:
        named = os.environ.get(ENV_VAR)
        return scheme_of(named) if named else "sqlite"
    m = _SCHEME.match(os.fspath(where)) if isinstance(where, str) else None
    return m.group(1).lower() if m else "sqlite"


def is_url(where: object) -> bool:
    """Whether ``where`` is a URL some backend other than a plain file opens (``sqlite://`` is a path)."""
    return isinstance(where, str) and scheme_of(where) != "sqlite"


def _sqlite_path(where: Where) -> Where:
    """``sqlite://PATH`` as ``PATH`` (``sqlite:///abs/file.db`` is absolute); a path as it is."""
    text = os.fspath(where)
    if isinstance(where, str) and text.lower().startswith("sqlite://"):
        return text[len("sqlite://") :]
    return where


@cache
def _registered() -> dict[str, Any]:
    """scheme -> entry point (or ``module:attr`` text for a built-in one not installed as such)."""
    found: dict[str, Any] = dict(_BUILT_IN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name.lower()] = ep
    return found


def registered_schemes() -> list[str]:
    """Every scheme a backend is registered under (built in or by an entry point), sorted."""
    return sorted(_registered())


def _load(target: Any) -> Backend:
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        backend: Backend = getattr(importlib.import_module(module), attr)
        return backend
    loaded: Backend = target.load()
    return loaded


_loaded: dict[str, Backend] = {}


def backend_for(where: Where | None) -> Backend:
    """The backend that opens ``where`` (loaded on first use)."""
    scheme = scheme_of(where)
    if scheme in _loaded:
        return _loaded[scheme]
    target = _registered().get(scheme)
    if target is None:
        known = ", ".join(f"{s}://" for s in sorted(_registered()))
        raise BackendMissingError(
            f"no backend opens {scheme}:// databases (known: {known}, or a file path); a backend"
            f" package registers one under the {ENTRY_POINT_GROUP!r} entry point group"
        )
    try:
        backend = _load(target)
    except ImportError as exc:
        extra = _EXTRAS.get(scheme)
        install = f"pip install 'axio-context[{extra}]'" if extra else "install the package that provides it"
        raise BackendMissingError(
            f"a {scheme}:// database needs the {extra or scheme} backend: {install} ({exc})"
        ) from None
    _loaded[scheme] = backend
    return backend


def backend_of(handle: object) -> Backend:
    """The backend whose connection or pool ``handle`` is (backends already loaded asked first)."""
    for backend in _loaded.values():
        if backend.owns(handle):
            return backend
    for scheme in _registered():
        try:
            backend = backend_for(f"{scheme}://")
        except BackendMissingError:
            continue
        if backend.owns(handle):
            return backend
    raise TypeError(
        f"not a database connection or pool of any backend: {type(handle).__name__}"
        " (pass an open connection or pool, or a path or URL)"
    )


def open_database(
    where: Where | None = None,
    *,
    create: bool = True,
    readonly: bool = False,
    busy_timeout: float | None = None,
    key: bytes | str | None = None,
) -> AbstractAsyncContextManager[OpenDatabase]:
    """``async with open_database(where) as db``: the whole database at ``where`` (a path,
    ``sqlite://PATH``, ``postgresql://...``, or a registered scheme; None: ``$AXIO_CONTEXT_DB``,
    else the default SQLite file), closed after the block. ``key``: the key of an encrypted
    database (:mod:`axio_context.encryption`; None: the environment's, where the backend reads it)."""
    if where is None and os.environ.get(ENV_VAR):
        where = os.environ[ENV_VAR]
    backend = backend_for(where)
    return backend.open_database(
        None if where is None else _sqlite_path(where),
        create=create,
        readonly=readonly,
        busy_timeout=busy_timeout,
        **_key_option(backend, key),
    )


def _key_option(backend: Backend, key: bytes | str | None) -> dict[str, Any]:
    """``key`` as a keyword for ``backend`` (none when there is no key, so a backend that does not
    encrypt is called as before); a key for a backend that does not encrypt is a one-line error."""
    if key is None:
        return {}
    if not getattr(backend, "encrypts", False):
        from ..encryption import EncryptionUnavailableError

        raise EncryptionUnavailableError(f"the {backend.name} backend does not open databases with a key")
    return {"key": key}


async def connect(where: Where, **options: Any) -> Any:
    """An open connection or pool on ``where``, which the caller closes (``await h.close()``);
    ``options`` go to the backend's ``connect`` (SQLite's ``synchronous``)."""
    backend = backend_for(where)
    key = options.pop("key", None)
    return await backend.connect(_sqlite_path(where), **options, **_key_option(backend, key))


def default_location() -> str | Path:
    """The database used when none is named: ``$AXIO_CONTEXT_DB`` (a path or a URL), else the
    SQLite backend's default file."""
    named = os.environ.get(ENV_VAR)
    if named:
        return named if is_url(named) else Path(named).expanduser()
    default: Callable[[], Path] = backend_for(None).default_location  # type: ignore[attr-defined]
    return default()
