"""The vocabulary of plans: the statements a plan yields, the dialect it writes them in, and the
runner protocol a backend implements (see the package docstring)."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Sequence
from functools import lru_cache
from typing import Any, Concatenate, Final, NamedTuple, ParamSpec, Protocol, TypeAlias, TypeVar

import msgspec

from ..messages import SessionInfo

__all__ = [
    "Dialect",
    "Execute",
    "ExecuteMany",
    "Native",
    "Plan",
    "PlanFn",
    "Row",
    "Rows",
    "Runner",
    "Step",
    "Value",
    "decode_object",
    "encode_json",
    "is_one_statement",
    "numbered",
    "one_statement",
    "resume",
]

T = TypeVar("T")
P = ParamSpec("P")


class Rows(NamedTuple):
    """Every row of a query (a list of sequences, indexable by position)."""

    sql: str
    args: Sequence[Any] = ()


class Row(NamedTuple):
    """The first row of a query, or None."""

    sql: str
    args: Sequence[Any] = ()


class Value(NamedTuple):
    """The first column of a query's first row, or None when there is no row."""

    sql: str
    args: Sequence[Any] = ()


class Execute(NamedTuple):
    """A statement run for its effect (None is sent back)."""

    sql: str
    args: Sequence[Any] = ()


class ExecuteMany(NamedTuple):
    """One statement run once per argument tuple (None is sent back)."""

    sql: str
    rows: Sequence[Sequence[Any]]


class Native(NamedTuple):
    """A backend's own function, called with the transaction's connection first and ``args``
    after (on SQLite's worker thread; awaited on PostgreSQL); its result is sent back. For what
    a layer shares with the session store (appending, clearing a session), which each backend
    writes in its own way: the layer gets the function from its backend, never names one."""

    fn: Callable[..., Any]
    args: Sequence[Any] = ()


Step: TypeAlias = Rows | Row | Value | Execute | ExecuteMany | Native
#: A plan: yields steps, is sent each step's result, returns the operation's result.
Plan: TypeAlias = Generator[Step, Any, T]
#: What a runner carries out: called with the runner's dialect and the caller's arguments.
PlanFn: TypeAlias = Callable[Concatenate["Dialect", P], Plan[T]]


F = TypeVar("F", bound=Callable[..., Any])


def one_statement(fn: F) -> F:
    """Mark ``fn`` as a plan that yields exactly one statement, read or written alone: a runner
    may run it outside a transaction (one statement is its own snapshot and atomic), which saves
    PostgreSQL the BEGIN and COMMIT round trips."""
    fn.__dict__["one_statement"] = True
    return fn


def is_one_statement(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` was marked by :func:`one_statement`."""
    return bool(getattr(fn, "__dict__", {}).get("one_statement"))


def resume(plan: Plan[Any], result: Any = None, error: Exception | None = None) -> tuple[bool, Any]:
    """Hand ``plan`` its last step's result (or throw the step's error into it, where it may be
    handled): ``(True, the next step)``, or ``(False, the plan's result)`` once it returns. A
    runner starts a plan with ``resume(plan)`` and loops while the first item is True."""
    try:
        return True, (plan.send(result) if error is None else plan.throw(error))
    except StopIteration as stop:
        return False, stop.value


_JSON: Final = msgspec.json.Encoder()
_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])


def encode_json(value: Any) -> str:
    """``value`` as JSON text: what a JSON column (TEXT on SQLite, ``jsonb`` on PostgreSQL) takes."""
    return _JSON.encode(value).decode()


def decode_object(text: str | bytes) -> dict[str, Any]:
    """A JSON object read back from a JSON column's text."""
    return _OBJECT.decode(text)


# A "?" outside quoted strings, identifiers and comments (layer SQL keeps "?" out of those).
_PLACEHOLDER: Final = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|\?")


@lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """``sql`` with each ``?`` placeholder made ``$1``, ``$2``, ... (PostgreSQL's form)."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(0) != "?":
            return match.group(0)
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, sql)


class Dialect:
    """The fragments in which two SQL backends differ, for statements written once.

    The defaults are SQLite's; PostgreSQL's dialect overrides them. Every fragment that takes a
    parameter holds exactly one ``?``.
    """

    #: The backend's name, as the registry and messages call it.
    name: str = "sqlite"
    #: Appended to a SELECT that must lock the rows it reads until the transaction ends (SQLite
    #: takes the database's write lock when the write transaction begins, so nothing).
    lock_rows: str = ""
    #: The same for rows that must not change or vanish before commit (a shared lock).
    share_rows: str = ""
    #: A statement taking one text parameter that locks that key until the transaction ends, for
    #: a row that may not exist yet (None: the write transaction already excludes other writers).
    key_lock: str | None = None

    def json_param(self) -> str:
        """A JSON parameter (bind :meth:`json_arg`'s text)."""
        return "?"

    def json_arg(self, value: Any) -> str:
        """``value`` as the JSON text a :meth:`json_param` takes, written so that it reads back
        as it was (same numbers, same types)."""
        return encode_json(value)

    def json_text(self, column: str) -> str:
        """A JSON column read as text (:func:`decode_object` takes it), whether SQLite holds it
        as text or as JSONB."""
        return f"json({column})"

    def sealed(self, value: Any) -> Any:
        """``value`` (bytes or text a user wrote) as the argument of its column: a backend that
        encrypts on the client marks it to be sealed (PostgreSQL; SQLite encrypts the whole file)."""
        return value

    def index_text(self, value: Any) -> Any:
        """``value`` (search text of a user's words) as an argument: a backend that encrypts on
        the client marks it to be left out under a key (no index of plaintext)."""
        return value

    def sealing(self) -> Plan[bool]:
        """Whether this transaction seals what users wrote (PostgreSQL under a key): a condition
        on such a column cannot run on the server, so the plan checks the rows it reads itself.
        SQLite: never (its file is encrypted whole), and no statement is run."""
        return False
        yield

    def any_of(self, column: str, kind: str = "text") -> str:
        """``column`` is one of a list parameter's values (bind :meth:`list_arg`)."""
        return f"{column} IN (SELECT value FROM json_each(?))"

    def list_arg(self, values: Iterable[Any]) -> Any:
        """A list parameter for :meth:`any_of` and :meth:`each`."""
        return encode_json(list(values))

    def each(self, kind: str = "text") -> str:
        """A SELECT of one column: the values of a list parameter (bind :meth:`list_arg`)."""
        return "SELECT value FROM json_each(?)"

    #: The ``sessions`` columns a :class:`SessionInfo` is read from, in its field order (each
    #: backend's schema keeps its times its own way); read a row back with :meth:`info_of`.
    info_columns: str = ""

    def info_of(self, row: Sequence[Any]) -> SessionInfo:
        """The :class:`SessionInfo` of a row that starts with :attr:`info_columns`."""
        raise NotImplementedError(f"{type(self).__name__} does not read sessions")

    def infos(self, rows: Sequence[Sequence[Any]]) -> list[SessionInfo]:
        """:meth:`info_of` of every row."""
        return [self.info_of(r) for r in rows]

    #: A SELECT of the ``sid`` of the sessions holding a message of the run whose id is its one
    #: ``?`` (agent sessions of the run's thread; each schema finds their messages its own way).
    run_sessions: str = ""

    def contains(self, column: str) -> str:
        """``column`` holds a text parameter anywhere, case-insensitively (bind :meth:`contains_arg`)."""
        return f"{column} LIKE ? ESCAPE '\\'"

    def contains_arg(self, text: str) -> str:
        """``text`` for :meth:`contains` (a LIKE pattern here, its own ``%`` and ``_`` literal)."""
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return f"%{escaped}%"

    def before_key(self, order: str, time: int, sid: int) -> tuple[str, list[Any]]:
        """The condition (and its values) keeping the sessions after a page's last one, ``(time,
        sid)``, in ``ORDER BY order DESC, sid DESC``."""
        return f"({order} < ? OR ({order} = ? AND sid < ?))", [time, time, sid]

    def by_code_point(self, column: str) -> str:
        """``column`` in an ORDER BY that sorts text as Python does (by code point)."""
        return column


class Runner(Protocol):
    """How one backend carries out plans: each call is one transaction on its database."""

    @property
    def dialect(self) -> Dialect:
        """The dialect this runner's plans are written in."""
        ...

    async def read(self, fn: PlanFn[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(dialect, *args)`` as one read snapshot."""
        ...

    async def write(self, fn: PlanFn[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn(dialect, *args)`` as one write transaction: all of it, or nothing."""
        ...
