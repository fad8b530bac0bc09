"""``axio-context usage``: recorded usage totals by session, agent, run, model, project or day.

One call on :class:`~axio_context_sqlite.usage.SQLiteUsageRecorder` (its rollups: fast on a
million rows), formatted as a table for people or ``--json`` / ``--nl`` for programs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from axio_context.usage_limits import GROUPS, UsageTotals

from .app import cli, no_sessions_yet, with_db
from .backends import OpenDatabase
from .options import When, one_format, output_options
from .output import Column, emit

__all__ = ["usage"]


def _row(by: str, t: UsageTotals) -> dict[str, Any]:
    u = t.usage
    return {
        by: t.key,
        "requests": u.requests,
        "tool_calls": u.tool_calls,
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
        "cache_read_tokens": u.cache_read_tokens,
        "cache_write_tokens": u.cache_write_tokens,
        "output_reasoning_tokens": u.output_reasoning_tokens,
        "cost": None if u.cost is None else str(u.cost),
        "details": u.details,
        "first_at": t.first_at.isoformat(timespec="milliseconds"),
        "last_at": t.last_at.isoformat(timespec="milliseconds"),
    }


@cli.command()
@click.option(
    "--by",
    type=click.Choice(GROUPS),
    default="session",
    show_default=True,
    help="Group the totals by this.",
)
@click.option(
    "--since", type=When(), help="Only usage recorded since: 2025-06-01, 2025-06-01T14:30, 7d, 12h."
)
@output_options
@click.pass_context
def usage(ctx: click.Context, by: str, since: datetime | None, as_json: bool, nl: bool) -> None:
    """Recorded model usage: requests, tool calls, tokens and cost per group, most tokens first
    (by day: oldest first)."""
    one_format(as_json, nl)

    async def go(db: OpenDatabase) -> list[UsageTotals]:
        recorder = db.usage_recorder()
        return await recorder.aggregate(by, since=since)  # type: ignore[arg-type]

    found = with_db(ctx, False, go, absent=lambda: None)
    if found is None:  # a fresh machine: no database yet
        if as_json:
            click.echo("[]")
        elif not nl:
            no_sessions_yet(ctx)
        return
    totals = found
    rows = [_row(by, t) for t in totals]

    def table_rows() -> list[dict[str, Any]]:
        shown = [{**r, by: r[by] or "-", "cost": r["cost"] or "", "last_at": r["last_at"][:16]} for r in rows]
        if rows:
            shown.append(
                {
                    by: "TOTAL",
                    **{
                        k: sum(r[k] for r in rows)
                        for k in ("requests", "tool_calls", "input_tokens", "output_tokens")
                    },
                    "total_tokens": sum(r["total_tokens"] for r in rows),
                    "cost": str(sum(t.usage.cost for t in totals if t.usage.cost is not None) or ""),
                }
            )
        return shown

    emit(
        rows,
        [
            Column(by, by.upper(), 40),
            Column("requests", "REQUESTS", right=True),
            Column("tool_calls", "TOOLS", right=True),
            Column("input_tokens", "INPUT", right=True),
            Column("output_tokens", "OUTPUT", right=True),
            Column("total_tokens", "TOTAL", right=True),
            Column("cost", "COST USD", right=True),
            Column("last_at", "LAST (UTC)"),
        ],
        as_json,
        nl,
        table_rows,
    )
