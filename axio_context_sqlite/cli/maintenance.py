"""Commands that look after the database file: stats, prune, vacuum, backup."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
import msgspec

from axio_context.messages import SessionInfo

from ..admin.maintenance import Stats
from ..database import Database, RecompressReport, VacuumReport
from ..memory import MemoryStats, memory_stats
from .app import COUNT_MAX, cli, settings_of, with_db
from .memory import memory_stats_lines
from .options import When, chosen_project, one_format, output_options, project_option, stored_project
from .output import (
    SESSION_COLUMNS,
    Column,
    echo_json,
    emit,
    human_size,
    info_dict,
    info_row,
    shown_for_infos,
    tilde,
)


@cli.command()
@click.option("--nl", is_flag=True, help="Output a JSON object on one line.")
@click.option("--json", "as_json", is_flag=True, help="Output a JSON object.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool, nl: bool) -> None:
    """Sessions, messages, tokens and size on disk, in total and by project; the memory stores."""

    async def go(db: Database) -> tuple[Stats, MemoryStats]:
        return await db.stats(), await memory_stats(db.connection)

    s, mem = with_db(ctx, False, go)
    if as_json or nl:
        one_format(as_json, nl)
        echo_json({**msgspec.to_builtins(s), "memory": msgspec.to_builtins(mem)}, indent=2 if as_json else 0)
        return
    path = settings_of(ctx).path
    click.echo(f"database   {path}")
    on_disk = human_size(s.file_bytes + s.wal_bytes)
    click.echo(f"size       {on_disk} ({human_size(s.wal_bytes)} WAL, {s.free_pages:,} free pages)")
    click.echo(f"sessions   {s.sessions:,}")
    click.echo(f"messages   {s.messages:,} ({s.stored_messages:,} stored; forks share the rest)")
    click.echo(f"tokens     {s.input_tokens:,} in / {s.output_tokens:,} out")
    dicts = f"{s.dictionaries} compression {'dictionary' if s.dictionaries == 1 else 'dictionaries'}"
    sealed = f"; {s.sealed_messages:,} messages sealed in {s.chunks:,} chunk(s)" if s.chunks else ""
    click.echo(f"payloads   {human_size(s.payload_bytes)} ({dicts}{sealed})")
    click.echo(f"media      {s.blobs:,} blob(s), {human_size(s.blob_bytes)}")
    click.echo(f"compaction {s.checkpoints:,} checkpoint(s)")
    click.echo("\n".join(memory_stats_lines(mem)))
    if s.by_project:
        click.echo("")
        rows = [
            {
                "project": tilde(p.project) or "(none)",
                "sessions": f"{p.sessions:,}",
                "messages": f"{p.messages:,}",
                "in": f"{p.input_tokens:,}",
                "out": f"{p.output_tokens:,}",
            }
            for p in s.by_project
        ]
        emit(
            rows,
            [
                Column("project", "PROJECT", 48),
                Column("sessions", "SESSIONS", right=True),
                Column("messages", "MESSAGES", right=True),
                Column("in", "IN", right=True),
                Column("out", "OUT", right=True),
            ],
            False,
            False,
        )


@cli.command()
@click.option("--before", type=When(), help="Sessions last updated before this (a date, or an age like 90d).")
@click.option("--keep", type=click.IntRange(0, COUNT_MAX), help="Keep the N most recently updated sessions.")
@project_option
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@output_options
@click.pass_context
def prune(
    ctx: click.Context,
    before: datetime | None,
    keep: int | None,
    project: str | None,
    here: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
    nl: bool,
) -> None:
    """Delete whole old sessions: --before DATE and/or --keep N, optionally in one project."""
    if before is None and keep is None:
        raise click.UsageError("give --before DATE and/or --keep N")
    scope = chosen_project(project, here)

    async def candidates(db: Database) -> tuple[str | None, list[SessionInfo], dict[str, str]]:
        project = await stored_project(db, scope)
        infos = await db.prune(before=before, keep=keep, project=project, dry_run=True)
        return project, infos, {} if as_json or nl else await shown_for_infos(db, infos)

    stored, infos, shown = with_db(ctx, False, candidates)
    if dry_run or not infos:
        if infos or as_json or nl:
            emit(
                [info_dict(i) for i in infos],
                SESSION_COLUMNS,
                as_json,
                nl,
                lambda: [info_row(i, shown) for i in infos],
            )
        if not (as_json or nl):
            click.echo(
                f"{len(infos)} session(s) would be deleted" if dry_run else "nothing to prune", err=True
            )
        return
    if not yes:
        click.confirm(f"Delete {len(infos)} session(s)?", abort=True, err=True)
    ids = [i.session_id for i in infos]

    # Only what was listed, and of it only what still qualifies, checked again in the transaction
    # that deletes: a session an agent appended to while the prompt waited is kept.
    deleted = {
        i.session_id
        for i in with_db(ctx, False, lambda db: db.prune(before=before, keep=keep, project=stored, only=ids))
    }
    if as_json or nl:
        emit([info_dict(i) for i in infos if i.session_id in deleted], SESSION_COLUMNS, as_json, nl)
    else:
        click.echo(f"deleted {len(deleted)} session(s)")
    if len(deleted) < len(infos):
        click.echo(
            f"kept {len(infos) - len(deleted)} listed session(s) that changed meanwhile "
            "(updated since, or deleted by someone else)",
            err=True,
        )


@cli.command()
@click.option(
    "--recompress",
    is_flag=True,
    help="First retrain the compression dictionary on the whole database, rewrite every payload "
    "with it, then rebuild the file (a full vacuum).",
)
@click.pass_context
def vacuum(ctx: click.Context, recompress: bool) -> None:
    """Reclaim the space deleted sessions left, and truncate the WAL."""

    async def both(db: Database) -> tuple[RecompressReport | None, VacuumReport]:
        # rows shrink in place: only a full rebuild packs the pages they leave part-empty
        return (await db.recompress() if recompress else None), await db.vacuum(full=recompress)

    rc, r = with_db(ctx, False, both)
    if rc is not None:
        if rc.dictionary is None:
            click.echo("recompress: too few compressible payloads to train a dictionary yet")
        else:
            click.echo(
                f"recompressed {rc.rows:,} payload(s) with dictionary {rc.dictionary}:"
                f" {human_size(rc.bytes_before)} -> {human_size(rc.bytes_after)};"
                f" {rc.dictionaries_removed} unused dictionary(ies) deleted"
            )
    if r.chunks_sealed:
        click.echo(f"sealed {r.chunks_sealed:,} block(s) of older messages into chunks")
    note = " (WAL still in use by another connection)" if r.wal_busy else ""
    click.echo(f"{r.method} vacuum: {human_size(r.bytes_before)} -> {human_size(r.bytes_after)}{note}")


@cli.command()
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite DEST if it exists.")
@click.pass_context
def backup(ctx: click.Context, dest: Path, force: bool) -> None:
    """Write a consistent copy of the database to DEST, even while it is in use."""
    with_db(ctx, False, lambda db: db.backup(dest, overwrite=force))
    click.echo(f"backed up {settings_of(ctx).path} to {dest} ({human_size(dest.stat().st_size)})")
