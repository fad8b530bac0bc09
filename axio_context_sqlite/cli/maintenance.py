"""Commands that look after the database file: stats, check (doctor), prune, vacuum, backup."""

from __future__ import annotations

import copy
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import click
import msgspec

from axio_context.backends import Capability, damage_checking, file_upkeep
from axio_context.memory.expiring import ExpiredCounts
from axio_context.messages import SessionInfo
from axio_context.transcript.reports import DamagedRow

from ..database import RecompressReport, VacuumReport
from ..memory import MemoryStats
from ..store.upkeep import Stats
from .app import cli, no_sessions_yet, read_db, settings_of, with_db
from .backends import OpenDatabase
from .expiring import prune_expired
from .memory import memory_stats_lines
from .options import Count, When, chosen_project, one_format, output_options, project_option, stored_project
from .output import (
    SESSION_COLUMNS,
    echo_json,
    emit,
    human_size,
    info_dict,
    info_row,
    one_line,
    say,
    shown_for_infos,
    visible,
)
from .postgres_stats import expired_line, postgres_stats, project_table


@cli.command()
@click.option("--nl", is_flag=True, help="Output a JSON object on one line.")
@click.option("--json", "as_json", is_flag=True, help="Output a JSON object.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool, nl: bool) -> None:
    """Sessions, messages, tokens and size on disk, in total and by project; the memory stores."""
    one_format(as_json, nl)

    async def go(db: OpenDatabase) -> tuple[Any, MemoryStats | None, str, ExpiredCounts]:
        s = await db.stats()
        expired = await db.memory_stores().expiry().count_expired()
        if not isinstance(s, Stats):  # a server's totals (PostgreSQL): no file to measure
            return s, None, str(db.path), expired  # the URL, its password hidden
        return s, await db.memory_stats(), "", expired

    found = read_db(ctx, go, absent=lambda: None)
    if found is None:  # a fresh machine: no database yet
        if as_json or nl:
            empty = dict.fromkeys(_TOTALS, 0)
            echo_json({"path": settings_of(ctx).shown, **empty, "by_project": []}, indent=2 if as_json else 0)
        else:
            no_sessions_yet(ctx)
        return
    s, mem, url, expired = found
    if mem is None:
        postgres_stats(cast(Any, s), url, as_json, nl, expired)
        return
    path = settings_of(ctx).shown
    if as_json or nl:
        memory = {"memory": msgspec.to_builtins(mem), "expired": msgspec.to_builtins(expired)}
        echo_json(
            {"path": path, **msgspec.structs.asdict(s), **memory},
            indent=2 if as_json else 0,
        )
        return
    say(f"database   {path}")
    on_disk = human_size(s.file_bytes + s.wal_bytes)
    click.echo(f"size       {on_disk} ({human_size(s.wal_bytes)} WAL, {s.free_pages:,} free pages)")
    click.echo(f"sessions   {s.sessions:,}")
    click.echo(f"messages   {s.messages:,} ({s.stored_messages:,} stored; forks share the rest)")
    click.echo(f"tokens     {s.input_tokens:,} in / {s.output_tokens:,} out")
    notes = [f"{s.sealed_messages:,} messages sealed in {s.chunks:,} chunk(s)"] if s.chunks else []
    if s.dictionaries:
        notes.append(f"{s.dictionaries} old compression dictionary(ies): vacuum --recompress removes them")
    click.echo(f"payloads   {human_size(s.payload_bytes)}" + (f" ({'; '.join(notes)})" if notes else ""))
    click.echo(f"media      {s.blobs:,} blob(s), {human_size(s.blob_bytes)}")
    click.echo(f"embeddings {s.vectors:,} message embedding(s), {human_size(s.vector_bytes)}")
    click.echo(f"compaction {s.checkpoints:,} checkpoint(s)")
    click.echo("\n".join(memory_stats_lines(mem)))
    click.echo(expired_line(expired))
    project_table(s.by_project)


#: The totals every backend's ``stats`` has (:class:`axio_context.backends.DatabaseStats`).
_TOTALS = (
    "sessions",
    "messages",
    "stored_messages",
    "input_tokens",
    "output_tokens",
    "checkpoints",
    "vectors",
)

#: Sessions prune's confirmation names; the rest are counted.
_NAMED = 10


@cli.command()
@click.option("--before", type=When(), help="Sessions last updated before this (a date, or an age like 90d).")
@click.option("--keep", type=Count(0), help="Keep the N most recently updated sessions.")
@project_option
@click.option(
    "--expired",
    is_flag=True,
    help="Instead: delete the vector documents, blobs and task boards whose TTL is over.",
)
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
    expired: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
    nl: bool,
) -> None:
    """Delete whole old sessions: --before DATE and/or --keep N, optionally in one project; or,
    with --expired, what has outlived its TTL."""
    if expired:
        if before is not None or keep is not None or project is not None or here:
            raise click.UsageError("--expired takes no --before, --keep or project")
        prune_expired(ctx, dry_run, yes, as_json, nl)
        return
    if before is None and keep is None:
        raise click.UsageError("give --before DATE and/or --keep N (or --expired)")
    scope = chosen_project(project, here)

    async def candidates(db: OpenDatabase) -> tuple[str | None, list[SessionInfo], dict[str, str]]:
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
        named = [shown.get(i.session_id, i.session_id) for i in infos[:_NAMED]]
        more = f" and {len(infos) - _NAMED} more" if len(infos) > _NAMED else ""
        if not click.confirm(f"Delete {len(infos)} session(s): {visible(', '.join(named))}{more}?", err=True):
            click.echo("nothing deleted", err=True)  # a refusal is an answer, not an error
            return
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
    help="First rewrite the payloads earlier versions compressed with a dictionary as plain zstd "
    "and delete the dictionaries, then rebuild the file (a full vacuum).",
)
@output_options(listing=False)
@click.pass_context
def vacuum(ctx: click.Context, recompress: bool, as_json: bool) -> None:
    """Reclaim the space deleted sessions left, and truncate the WAL."""

    async def both(db: OpenDatabase) -> tuple[RecompressReport | None, VacuumReport]:
        # rows shrink in place: only a full rebuild packs the pages they leave part-empty
        file = file_upkeep(db, Capability.RECOMPRESS if recompress else Capability.VACUUM)
        return (await file.recompress() if recompress else None), await file.vacuum(full=recompress)

    rc, r = with_db(ctx, False, both)
    if as_json:
        echo_json({"recompress": rc, "vacuum": r})
        return
    if rc is not None:
        left = f"; {rc.dictionaries_left} kept for damaged rows" if rc.dictionaries_left else ""
        click.echo(
            f"recompressed {rc.rows:,} payload(s):"
            f" {human_size(rc.bytes_before)} -> {human_size(rc.bytes_after)};"
            f" {rc.dictionaries_removed} dictionary(ies) deleted{left}"
        )
    if r.chunks_sealed:
        click.echo(f"sealed {r.chunks_sealed:,} block(s) of older messages into chunks")
    note = " (WAL still in use by another connection)" if r.wal_busy else ""
    click.echo(f"{r.method} vacuum: {human_size(r.bytes_before)} -> {human_size(r.bytes_after)}{note}")


@cli.command()
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite DEST if it exists.")
@output_options(listing=False)
@click.pass_context
def backup(ctx: click.Context, dest: Path, force: bool, as_json: bool) -> None:
    """Write a consistent copy of the database to DEST, even while it is in use."""
    with_db(ctx, False, lambda db: file_upkeep(db, Capability.BACKUP).backup(dest, overwrite=force))
    size = dest.stat().st_size
    if as_json:
        echo_json({"source": settings_of(ctx).shown, "destination": str(dest), "bytes": size})
        return
    say(f"backed up {settings_of(ctx).shown} to {dest} ({human_size(size)})")


#: Damaged rows ``check`` lists one per line for people; the rest are counted.
_SHOWN = 20


def _damaged_line(d: DamagedRow) -> str:
    where = f"positions {d.position}..{d.position + d.count - 1}" if d.count > 1 else f"position {d.position}"
    return visible(f"  session {d.session_id!r} {where}: {d.reason}")


@cli.command()
@click.option(
    "--quarantine",
    "move",
    is_flag=True,
    help="Move rows that do not decode to the quarantine (a placeholder keeps their position).",
)
@click.option(
    "--list-quarantine", is_flag=True, help="List the rows in the quarantine (--json: with their bytes)."
)
@output_options(listing=False)
@click.pass_context
def check(ctx: click.Context, move: bool, list_quarantine: bool, as_json: bool) -> None:
    """Find damage: rows that do not decode, SQLite's quick check, the keyword index (alias: doctor).

    Exits with 1 while a problem remains."""
    if list_quarantine:
        if move:
            raise click.UsageError("--quarantine and --list-quarantine cannot be used together")
        rows = with_db(ctx, False, lambda db: damage_checking(db).quarantined())
        if as_json:
            echo_json(rows)
            return
        if not rows:
            click.echo("the quarantine is empty")
        for q in rows:
            where = f"{q.position}..{q.position + q.count - 1}" if q.count > 1 else str(q.position)
            click.echo(
                visible(
                    f"{q.id}  session {q.session_id!r} position {where}  {len(q.payload):,} B  {q.reason}"
                )
            )
        return

    report = with_db(ctx, False, lambda db: damage_checking(db).check(quarantine=move))
    if as_json:
        echo_json(report)
    else:
        click.echo(f"checked    {report.messages_checked:,} stored message(s)")
        say(f"sqlite     {one_line('; '.join(report.quick_check[:5])) or 'ok'}")
        click.echo(f"damaged    {len(report.damaged):,} row(s) that do not decode")
        for d in report.damaged[:_SHOWN]:
            click.echo(_damaged_line(d))
        if len(report.damaged) > _SHOWN:
            click.echo(f"  and {len(report.damaged) - _SHOWN:,} more (--json lists them all)")
        for problem in report.problems:
            click.echo(visible(f"problem    {problem}"))
        if report.moved:
            click.echo(f"quarantined {len(report.moved):,} row(s); --list-quarantine shows them")
        elif report.damaged:
            click.echo("--quarantine moves them aside (a placeholder keeps their position)", err=True)
        if report.quarantined:
            click.echo(f"quarantine {report.quarantined:,} row(s) held")
        click.echo("ok" if report.ok else "problems found")
    if not report.ok:
        ctx.exit(1)


# ``doctor`` is ``check`` under another name: listed once (as check's alias), and its --help
# says which command it is.
_doctor = copy.copy(check)
_doctor.name = "doctor"
_doctor.hidden = True
_doctor.help = "Another name of check. " + (check.help or "").replace(" (alias: doctor)", "")
cli.add_command(_doctor, "doctor")
