"""SQLite's :class:`~axio_context.sql.Runner`: a plan runs whole on the connection's worker
thread (one thread hop per operation, as the hand-written layers did), inside :func:`read_tx` or
:func:`write_tx`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import starmap
from typing import Any, Final, ParamSpec, TypeVar

import aiosqlite

from axio_context.messages import SessionInfo
from axio_context.sql import Dialect, Execute, ExecuteMany, Native, Plan, PlanFn, Row, Rows, Step, Value
from axio_context.sql.plan import is_one_statement, resume

from .calls import run, run_short
from .listing import INFO_COLUMNS, INFO_FIELDS, info_from_row
from .runs import RUN_SESSIONS
from .transactions import read_tx, write_tx

__all__ = ["SQLITE", "SQLiteDialect", "SQLiteRunner", "drive"]

T = TypeVar("T")
P = ParamSpec("P")


class SQLiteDialect(Dialect):
    """:class:`~axio_context.sql.Dialect`'s defaults, with how this schema's sessions read."""

    info_columns = INFO_COLUMNS
    run_sessions = RUN_SESSIONS

    def info_of(self, row: Any) -> SessionInfo:
        return info_from_row(row)

    def infos(self, rows: Sequence[Sequence[Any]]) -> list[SessionInfo]:
        # Rows of INFO_COLUMNS alone are SessionInfo's arguments as they stand (a whole listing).
        if rows and len(rows[0]) == INFO_FIELDS:
            return list(starmap(SessionInfo, rows))
        return [info_from_row(r) for r in rows]


#: SQLite's dialect.
SQLITE: Final = SQLiteDialect()


def _step(c: Any, step: Step) -> Any:
    if isinstance(step, Rows):
        return c.execute(step.sql, step.args).fetchall()
    # Row and Value step their statement to the end (fetchall): an INSERT ... RETURNING left
    # half-stepped has not yet updated sqlite_sequence, and the next insert reused a number.
    if isinstance(step, Row):
        rows = c.execute(step.sql, step.args).fetchall()
        return rows[0] if rows else None
    if isinstance(step, Value):
        rows = c.execute(step.sql, step.args).fetchall()
        return rows[0][0] if rows else None
    if isinstance(step, Execute):
        c.execute(step.sql, step.args)
        return None
    if isinstance(step, ExecuteMany):
        c.executemany(step.sql, step.rows)
        return None
    if isinstance(step, Native):
        return step.fn(c, *step.args)
    raise TypeError(f"not a plan step: {step!r}")


def _outcome(c: Any, step: Step) -> tuple[Any, Exception | None]:
    try:
        return _step(c, step), None
    except Exception as exc:  # the plan may handle it; if not, it comes back out
        return None, exc


def drive(c: Any, plan: Plan[T]) -> T:
    """Carry out ``plan`` on the raw connection ``c`` (already inside a transaction)."""
    more, value = resume(plan)
    while more:
        more, value = resume(plan, *_outcome(c, value))
    return value  # type: ignore[no-any-return]


def _in(c: Any, tx: Callable[[Any], Any], fn: Callable[..., Plan[T]], args: Any, kwargs: Any) -> T:
    if tx is read_tx and is_one_statement(fn):  # one SELECT is its own snapshot: no BEGIN/COMMIT
        return drive(c, fn(SQLITE, *args, **kwargs))
    with tx(c):
        return drive(c, fn(SQLITE, *args, **kwargs))


class SQLiteRunner:
    """Runs plans on one aiosqlite connection (from :func:`axio_context_sqlite.connect`).
    ``inline_reads``: a read runs on the event loop's thread when the connection's worker is idle
    (:func:`.calls.run_short`: no thread hop, as the session store's short reads), for a layer
    whose reads are a few indexed lookups."""

    __slots__ = ("conn", "inline_reads")

    def __init__(self, conn: aiosqlite.Connection, *, inline_reads: bool = False) -> None:
        self.conn = conn
        self.inline_reads = inline_reads

    @property
    def dialect(self) -> Dialect:
        """SQLite's dialect."""
        return SQLITE

    async def read(self, fn: PlanFn[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run the plan in one read snapshot."""
        if self.inline_reads:
            return await run_short(self.conn, _in, read_tx, fn, args, kwargs)
        return await run(self.conn, _in, read_tx, fn, args, kwargs)

    async def write(self, fn: PlanFn[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run the plan in one write transaction (the write lock taken up front)."""
        return await run(self.conn, _in, write_tx, fn, args, kwargs)
