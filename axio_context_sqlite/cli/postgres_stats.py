"""What ``stats`` prints for a PostgreSQL database: the totals SQLite's has, and per table the
bytes it takes on the server (heap, TOAST and indexes) instead of a file's pages."""

from __future__ import annotations

from typing import Any

import click
import msgspec

from axio_context.memory.expiring import ExpiredCounts

from .output import Column, echo_json, emit, human_size, say, tilde

__all__ = ["expired_line", "postgres_stats", "project_table"]


def postgres_stats(s: Any, where: str, as_json: bool, nl: bool, expired: ExpiredCounts | None = None) -> None:
    """Print a database server's ``stats`` (PostgreSQL's: table sizes, no file) for people, or as
    JSON; ``expired``: what ``prune --expired`` would delete."""
    due = {} if expired is None else {"expired": msgspec.to_builtins(expired)}
    if as_json or nl:
        echo_json(
            {"database": where, "backend": "postgresql", **msgspec.structs.asdict(s), **due},
            indent=2 if as_json else 0,
        )
        return
    say(f"database   {where} (PostgreSQL {s.server_version}, schema version {s.schema_version})")
    click.echo(f"size       {human_size(s.database_bytes)} (the whole database on the server)")
    click.echo(f"sessions   {s.sessions:,}")
    click.echo(f"messages   {s.messages:,} ({s.stored_messages:,} stored; forks share the rest)")
    if s.hidden_messages:
        click.echo(f"cleared    {s.hidden_messages:,} message(s) hidden by clear_run")
    click.echo(f"tokens     {s.input_tokens:,} in / {s.output_tokens:,} out")
    click.echo(f"embeddings {s.vectors:,} message embedding(s)")
    click.echo(f"compaction {s.checkpoints:,} checkpoint(s)")
    if expired is not None:
        click.echo(expired_line(expired))
    click.echo("")
    emit(
        [{"table": t.table, "size": human_size(t.bytes)} for t in s.tables if t.bytes],
        [Column("table", "TABLE", 32), Column("size", "SIZE", right=True)],
        False,
        False,
    )
    project_table(s.by_project)


def expired_line(expired: ExpiredCounts) -> str:
    """The ``stats`` line saying how many expired items wait for ``prune --expired``."""
    parts = f" ({expired.parts()})" if expired.total else ""
    return f"expired    {expired.total:,} item(s) due for prune --expired{parts}"


def project_table(by_project: Any) -> None:
    """The per-project lines of ``stats`` (both backends): sessions, messages, tokens in and out."""
    if not by_project:
        return
    click.echo("")
    rows = [
        {
            "project": tilde(p.project) or "(none)",
            "sessions": f"{p.sessions:,}",
            "messages": f"{p.messages:,}",
            "in": f"{p.input_tokens:,}",
            "out": f"{p.output_tokens:,}",
        }
        for p in by_project
    ]
    columns = [
        Column("project", "PROJECT", 48),
        Column("sessions", "SESSIONS", right=True),
        Column("messages", "MESSAGES", right=True),
        Column("in", "IN", right=True),
        Column("out", "OUT", right=True),
    ]
    emit(rows, columns, False, False)
