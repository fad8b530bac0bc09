"""PostgreSQL's :class:`~axio_context.sql.Runner`: a plan's statements are awaited one by one on
one pooled connection inside one transaction (a read-only repeatable-read snapshot for reads),
with ``?`` placeholders numbered and the driver's errors made into this package's named ones."""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Final, ParamSpec, TypeVar

import msgspec

from axio_context.messages import SessionInfo
from axio_context.sql import Dialect, Execute, ExecuteMany, Native, Plan, PlanFn, Row, Rows, Step, Value
from axio_context.sql.plan import is_one_statement, numbered, resume

from .connection import Pool, translated
from .info import INFO_COLUMNS, RUN_SESSIONS, info_of
from .sealed import Index, Sealed, encrypted

__all__ = ["POSTGRES", "PostgresDialect", "PostgresRunner", "drive"]

T = TypeVar("T")
P = ParamSpec("P")


_NUMBERS: Final = msgspec.json.Encoder(decimal_format="number")


def _float_text(x: float) -> Decimal:
    text = format(Decimal(repr(x)), "f")
    return Decimal(text if "." in text else text + ".0")


def _positional(value: Any) -> Any:
    """``value`` with every finite float as a Decimal of its shortest digits, positional, with a
    fractional part (``1e16`` -> ``10000000000000000.0``), so jsonb keeps it a float. No
    recursion: any depth."""
    if isinstance(value, float):
        return _float_text(value) if math.isfinite(value) else value
    if not isinstance(value, dict | list):
        return value
    root: Any = dict(value) if isinstance(value, dict) else list(value)
    stack = [root]
    while stack:
        node = stack.pop()
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for k in keys:
            item = node[k]
            if isinstance(item, float) and math.isfinite(item):
                node[k] = _float_text(item)
            elif isinstance(item, dict):
                node[k] = dict(item)
                stack.append(node[k])
            elif isinstance(item, list | tuple):
                node[k] = list(item)
                stack.append(node[k])
    return root


class PostgresDialect(Dialect):
    """PostgreSQL's fragments: ``jsonb`` parameters, arrays for lists, row locks, ``COLLATE "C"``."""

    name = "postgresql"
    lock_rows = " FOR UPDATE"
    share_rows = " FOR SHARE"
    key_lock = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"

    def json_param(self) -> str:
        return "?::jsonb"

    def json_arg(self, value: Any) -> Any:
        # jsonb keeps numbers as numeric: 5.879965698487907e16 comes back as 58799656984879070,
        # an int. A float written positionally with a fractional part keeps its scale, so it
        # comes back as the same float. Sealed under the pool's key, if any (see .sealed).
        return Sealed(_NUMBERS.encode(_positional(value)).decode(), json=True)

    def sealed(self, value: Any) -> Any:
        return Sealed(value)

    def index_text(self, value: Any) -> Any:
        return Index(value)

    def sealing(self) -> Plan[bool]:
        return bool((yield Native(encrypted)))

    def json_text(self, column: str) -> str:
        return f"{column}::text"

    def any_of(self, column: str, kind: str = "text") -> str:
        return f"{column} = ANY(?::{kind}[])"

    def list_arg(self, values: Iterable[Any]) -> Any:
        return list(values)

    def each(self, kind: str = "text") -> str:
        return f"SELECT unnest(?::{kind}[])"

    info_columns = INFO_COLUMNS
    run_sessions = RUN_SESSIONS

    def info_of(self, row: Any) -> SessionInfo:
        return info_of(row)

    def contains(self, column: str) -> str:
        return f"strpos(lower(COALESCE({column}, '')), lower(?)) > 0"

    def contains_arg(self, text: str) -> str:
        return text

    def before_key(self, order: str, time: int, sid: int) -> tuple[str, list[Any]]:
        return f"({order}, sid) < (?::bigint, ?::bigint)", [time, sid]

    def by_code_point(self, column: str) -> str:
        return f'{column} COLLATE "C"'


#: The dialect every PostgreSQL runner speaks.
POSTGRES: Final = PostgresDialect()


async def _step(conn: Any, step: Step) -> Any:
    if isinstance(step, Rows):
        return await conn.fetch(numbered(step.sql), *step.args)
    if isinstance(step, Row):
        return await conn.fetchrow(numbered(step.sql), *step.args)
    if isinstance(step, Value):
        return await conn.fetchval(numbered(step.sql), *step.args)
    if isinstance(step, Execute):
        await conn.execute(numbered(step.sql), *step.args)
        return None
    if isinstance(step, ExecuteMany):
        if step.rows:
            await conn.executemany(numbered(step.sql), step.rows)
        return None
    if isinstance(step, Native):
        return await step.fn(conn, *step.args)
    raise TypeError(f"not a plan step: {step!r}")


async def _outcome(conn: Any, step: Step) -> tuple[Any, Exception | None]:
    try:
        return await _step(conn, step), None
    except Exception as exc:  # the plan may handle it; if not, it comes back out
        return None, exc


async def drive(conn: Any, plan: Plan[T]) -> T:
    """Carry out ``plan`` on ``conn`` (already inside a transaction)."""
    more, value = resume(plan)
    while more:
        more, value = resume(plan, *(await _outcome(conn, value)))
    return value  # type: ignore[no-any-return]


class PostgresRunner:
    """Runs plans on an asyncpg pool (from :func:`axio_context_postgres.connect`); ``where``
    names the store in errors."""

    __slots__ = ("pool", "where")

    def __init__(self, pool: Pool, where: str = "PostgreSQL") -> None:
        self.pool = pool
        self.where = where

    @property
    def dialect(self) -> Dialect:
        """PostgreSQL's dialect."""
        return POSTGRES

    async def read(self, fn: PlanFn[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run the plan in one read-only snapshot (a one-statement plan outside any transaction:
        its statement is its own snapshot, and BEGIN and COMMIT would be two more round trips)."""
        if is_one_statement(fn):
            async with translated(self.where), self.pool.acquire() as conn:
                return await drive(conn, fn(POSTGRES, *args, **kwargs))
        async with (
            translated(self.where),
            self.pool.acquire() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            return await drive(conn, fn(POSTGRES, *args, **kwargs))

    async def write(self, fn: PlanFn[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run the plan in one transaction: all of it, or nothing."""
        async with translated(self.where), self.pool.acquire() as conn, conn.transaction():
            return await drive(conn, fn(POSTGRES, *args, **kwargs))
