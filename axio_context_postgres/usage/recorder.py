"""PostgresUsageRecorder: usage rows in the PostgreSQL database, beside the sessions they belong
to (the logic is :class:`~axio_context.usage_limits.sql_recorder.SQLUsageRecorder`'s; the
statements are :mod:`.statements`). Any number of processes may record at once: they queue on
row locks, in one order. A read that is one statement runs without BEGIN/COMMIT (a statement is
a snapshot of its own).
"""

from __future__ import annotations

from typing import Final, ParamSpec, TypeVar

from axio_context.sql import PlanFn
from axio_context.tokens import TokenCounter
from axio_context.usage_limits.sql_recorder import SQLUsageRecorder

from ..connection import Pool, translated
from ..runner import POSTGRES, PostgresRunner, drive
from ..store import PostgresContextStore
from .statements import STATEMENTS

__all__ = ["PostgresUsageRecorder"]

T = TypeVar("T")
P = ParamSpec("P")

#: How errors name where they happened.
WHERE: Final = "PostgreSQL usage recorder"


class PostgresUsageRecorder(SQLUsageRecorder):
    """Usage recorded in the PostgreSQL database of ``pool`` (owned by the caller).

    ``project`` files new sessions (those whose first write is a usage record) as
    :class:`PostgresContextStore` does: the resolved current directory by default. A row's
    project is its session's. ``token_counter`` estimates recorded messages' tokens.
    """

    def __init__(
        self, pool: Pool, project: str | None = None, *, token_counter: TokenCounter | None = None
    ) -> None:
        super().__init__(PostgresRunner(pool, WHERE), STATEMENTS, project, token_counter=token_counter)
        self._pool = pool

    @classmethod
    def of(
        cls, store: PostgresContextStore, *, token_counter: TokenCounter | None = None
    ) -> PostgresUsageRecorder:
        """A recorder on the store's pool and project (pass the store's ``token_counter`` too if
        it has its own: recorded messages' estimates then match its appends)."""
        return cls(store.pool, store.project, token_counter=token_counter)

    async def _read(self, fn: PlanFn[P, T], snapshot: bool, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if snapshot:
            return await super()._read(fn, snapshot, *args, **kwargs)
        async with translated(WHERE), self._pool.acquire() as conn:
            return await drive(conn, fn(POSTGRES, *args, **kwargs))
