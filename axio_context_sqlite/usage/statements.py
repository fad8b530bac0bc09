"""SQLite's :class:`~axio_context.usage_limits.sql.UsageStatements`: what this schema keeps its
own way. A cost is exact decimal text (summed in Python), a row's message is the message's key
(the position in its low bits), a run's owner is the session of its first row, and a record
checks the all-time rollups before it writes (SQLite's integer sums would turn into floats past
a bigint rather than fail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from axio_context.messages import Message, preview_for
from axio_context.sql import Dialect, Execute, ExecuteMany, Plan, Row, Rows, Value, encode_json
from axio_context.usage_limits.counts import RunUsage
from axio_context.usage_limits.records import DAY_MS
from axio_context.usage_limits.sql import CELL_COLUMNS, ROW_COLUMNS
from axio_context.usage_limits.stored import (
    ALL_TIME,
    COLUMNS,
    HELD_ROLLUPS,
    Extras,
    check_rollups,
    decode_extras,
    encode_extras,
    encode_maps,
    held_rollup_args,
    merge_extras,
    rollup_keys,
)

from ..store import appending, sessions
from ..store.keys import POSITION_MASK, SHIFT
from ..store.message_rows import encode_message

__all__ = ["STATEMENTS"]

_COLS: Final = ", ".join(COLUMNS)
_VALUES: Final = [f"column{i}" for i in range(1, len(ROW_COLUMNS) + 4)]
# The message's key from its session's sid and its position (sid 0, never given out, for a
# ledger row that outlived its session: the position is all a reader takes from the key).
_INSERT: Final = (
    f"INSERT INTO usage_records (at, session, agent, run, model, project, message, {_COLS},"
    f" audio_seconds, cost, details) SELECT {', '.join(_VALUES[:6])},"
    f" column7 | (COALESCE((SELECT sid FROM sessions WHERE id = column2), 0) << {SHIFT}),"
    f" {', '.join(_VALUES[7:])} FROM (VALUES ({', '.join('?' * len(_VALUES))}))"
)
_ADD: Final = (
    f"INSERT INTO usage_rollups (dim, key, day, {_COLS}, audio_seconds, first_at, last_at)"
    f" VALUES ({', '.join('?' * (len(COLUMNS) + 6))}) ON CONFLICT (dim, key, day) DO UPDATE SET "
    + ", ".join(f"{c} = {c} + excluded.{c}" for c in (*COLUMNS, "audio_seconds"))
    + ", first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)"
)
_CELLS: Final = (
    f"SELECT {', '.join(CELL_COLUMNS)} FROM usage_rollups WHERE (dim, key, day) IN"
    " (SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)) ORDER BY dim, key, day"
)

Encoded = tuple[list[Any], list[int], tuple[int, str] | None]


def _append(c: Any, session_id: str, project: str | None, batch: Encoded) -> int:
    appending.append(c, session_id, project, *batch)
    return int(c.execute("SELECT next_position - 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()[0])


def _add_tokens(c: Any, session_id: str, project: str | None, usage: RunUsage) -> str | None:
    sessions.add_tokens(c, session_id, project, usage.input_tokens, usage.output_tokens)
    found: str | None = c.execute("SELECT project FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
    return found


class _Statements:
    """SQLite's usage statements."""

    position = f"message & {POSITION_MASK}"
    cost_sum = "group_concat(cost, ' ')"
    maps = "group_concat(hex(details), ' ')"
    insert = _INSERT
    append = staticmethod(_append)
    add_tokens = staticmethod(_add_tokens)

    def cost_of(self, value: Any) -> Decimal | None:
        return None if value is None else sum(map(Decimal, value.split()), Decimal(0))

    def maps_of(self, value: Any) -> Iterable[bytes]:
        return () if value is None else map(bytes.fromhex, value.split())

    def cost_arg(self, cost: Decimal | None) -> Any:
        return None if cost is None else str(cost)

    def encode(self, message: Message, tokens: int, at: int) -> Encoded:
        return [encode_message(message)], [tokens], preview_for([message])

    def claim_run(self, d: Dialect, run: str, session_id: str) -> Plan[str | None]:
        owner: str | None = yield Value(
            "SELECT session FROM usage_records WHERE run = ? AND session <> ? LIMIT 1", (run, session_id)
        )
        return owner

    def claim_runs(self, d: Dialect, owners: Mapping[str, str]) -> Plan[None]:
        return
        yield

    def insert_row(self, d: Dialect, row: Sequence[Any], usage: RunUsage) -> Plan[int]:
        at, session_id, agent, run, model, project, position = row
        counts = [getattr(usage, name) for name in COLUMNS]
        cost = None if usage.cost is None else str(usage.cost)
        extras = encode_extras(usage)
        keys = rollup_keys(session_id, agent, run, model, project)
        check_rollups((yield Rows(HELD_ROLLUPS, held_rollup_args(keys))), usage)
        row_id = yield Value(
            _INSERT + " RETURNING id",
            (
                at,
                session_id,
                agent,
                run,
                model,
                project,
                position,
                *counts,
                usage.audio_seconds,
                cost,
                extras,
            ),
        )
        days = (at // DAY_MS, ALL_TIME)
        cells = [(dim, k, day) for dim, k in keys.items() for day in days]
        yield ExecuteMany(_ADD, [(*cell, *counts, usage.audio_seconds, at, at) for cell in cells])
        if cost is not None or extras is not None:  # exact decimals and merged maps, in Python
            mine = Extras(usage.details, usage.extra)
            for cell in cells:
                held, blob = yield Row(
                    "SELECT cost, details FROM usage_rollups WHERE dim = ? AND key = ? AND day = ?", cell
                )
                if usage.cost is not None:
                    held = str(Decimal(held) + usage.cost) if held is not None else str(usage.cost)
                if mine.d or mine.x:
                    blob = encode_maps(merge_extras(decode_extras(blob), mine))
                yield Execute(
                    "UPDATE usage_rollups SET cost = ?, details = ? WHERE dim = ? AND key = ? AND day = ?",
                    (held, blob, *cell),
                )
        return int(row_id)

    def held_cells(self, cells: Sequence[tuple[str, str, int]]) -> Rows:
        return Rows(_CELLS, [encode_json([list(cell) for cell in cells])])


#: The one statements object.
STATEMENTS: Final = _Statements()
