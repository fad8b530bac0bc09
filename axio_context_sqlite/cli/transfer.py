"""Commands that move sessions in and out: export, import, import-axio."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast

import click

from axio_context.backends import axio_import as axio_importer
from axio_context.transcript import FORMATS, FormatName
from axio_context.transcript.reports import DamagedRow

from ..admin.files import writing
from ..admin.importing import STDIN
from .agent_filters import agent_options, tag_filters
from .app import Written, cli, one_line_errors, read_db, settings_of, writing_db
from .backends import OpenDatabase
from .options import output_options, session_argument
from .output import Progress, ShownStream, echo_json, say, visible


@cli.command()
@session_argument(required=False, nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every session in the database.")
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="json", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to FILE (- is stdout), replacing it only once the export is complete.",
)
@click.option(
    "--strict", is_flag=True, help="Fail on a message that does not decode (default: leave it out, say so)."
)
@click.option(
    "--children",
    is_flag=True,
    help="Also the sessions under them: subagent sessions and forks, at any depth.",
)
@click.option(
    "--blocks/--no-blocks",
    "blocks",
    default=None,
    help="Also every memory block with its whole history (default: with --all only).",
)
@agent_options("sessions")
@click.pass_context
def export(
    ctx: click.Context,
    sessions: tuple[str, ...],
    all_: bool,
    fmt: str,
    output: str | None,
    strict: bool,
    children: bool,
    blocks: bool | None,
    agent_id: str | None,
    run_id: str | None,
) -> None:
    """Export sessions (default: the last active) as json, jsonl or markdown; with --all (or
    --blocks) the memory blocks too."""
    if all_ and sessions:
        raise click.UsageError("give SESSION arguments or --all, not both")
    tagged = agent_id is not None or run_id is not None
    if tagged and sessions:
        raise click.UsageError("give SESSION arguments or --agent/--run, not both")
    format_ = cast(FormatName, fmt)
    progress = Progress()

    async def go(db: OpenDatabase, out: Written | ShownStream) -> Any:
        ids: list[str] | None
        if tagged:
            page = await db.list_sessions(**tag_filters(db, agent_id, run_id))
            ids = [i.session_id for i in reversed(page.sessions)]
            if not ids:
                raise click.UsageError("no session matches --agent/--run")
        elif all_:
            ids = None
        elif sessions:
            ids = [await db.resolve(s) for s in sessions]
        else:
            ids = [await db.latest("updated")]
        if children and ids is not None:
            below = await db.descendants(ids)
            ids = list(dict.fromkeys(ids + below))
        result = await db.export(
            out.write,
            format=format_,
            session_ids=ids,
            progress=progress,
            skip_damaged=not strict,
            blocks=all_ if blocks is None else blocks,
        )
        out.flush()
        return result

    try:
        if output is None or output == "-":
            shown = ShownStream(Written(sys.stdout.buffer, None), as_json=format_ != "markdown")
            summary = read_db(ctx, lambda db: go(db, shown))
            _report_skipped(summary.skipped)
            return
        with one_line_errors(), writing(Path(output), settings_of(ctx).path) as f:
            summary = read_db(ctx, lambda db: go(db, Written(f, output)))
    finally:
        progress.close()
    _report_skipped(summary.skipped)
    skipped = f", {summary.blocks} memory block(s)" if summary.blocks else ""
    skipped += f", {len(summary.skipped)} left out (damaged)" if summary.skipped else ""
    say(
        f"exported {summary.sessions} session(s), {summary.messages} message(s){skipped} to {output}",
        err=True,
    )


#: Left-out messages named one per line on stderr; the rest are counted.
_SHOWN = 20


def _report_skipped(skipped: Sequence[DamagedRow]) -> None:
    """Name, on stderr, the messages an export left out because they do not decode."""
    for d in skipped[:_SHOWN]:
        click.echo(visible(f"left out session {d.session_id!r} position {d.position}: {d.reason}"), err=True)
    if len(skipped) > _SHOWN:
        click.echo(f"and {len(skipped) - _SHOWN} more message(s) left out", err=True)
    if skipped:
        click.echo("each has a placeholder in the export; `axio-context check` finds them all", err=True)


@cli.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("-f", "--format", "fmt", type=click.Choice(["json", "jsonl"]), help="Default: detected.")
@click.option("--replace", is_flag=True, help="Overwrite sessions (and memory blocks) already here.")
@click.option("--new-ids", is_flag=True, help="Give every imported session a new id (import copies).")
@output_options(listing=False)
@click.pass_context
def import_(
    ctx: click.Context, file: str, fmt: str | None, replace: bool, new_ids: bool, as_json: bool
) -> None:
    """Import a json/jsonl export (- reads stdin) with any memory blocks it holds; validates all
    of it before writing anything."""
    if replace and new_ids:
        raise click.UsageError("--replace and --new-ids cannot be used together")
    # "-" is stdin; a file named "-" is ./- (which Path would shorten to "-" again)
    source = STDIN if file == "-" else Path(file) if Path(file) != STDIN else Path.cwd() / file
    report = writing_db(
        ctx,
        lambda db: db.import_file(
            source, format=cast(Literal["json", "jsonl"] | None, fmt), replace=replace, new_ids=new_ids
        ),
    )
    if as_json:
        echo_json(report)
        return
    messages = sum(s.messages for s in report.sessions)
    replaced = sum(s.replaced for s in report.sessions)
    extra = f", {replaced} replaced" if replaced else ""
    extra += f", {len(report.blocks)} memory block(s)" if report.blocks else ""
    shown = "standard input" if source == STDIN else file
    say(f"imported {len(report.sessions)} session(s), {messages} message(s){extra} from {shown}")


@cli.command("import-axio")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Overwrite sessions whose transcript here differs.")
@output_options(listing=False)
@click.pass_context
def import_axio(ctx: click.Context, path: Path, replace: bool, as_json: bool) -> None:
    """Migrate a database written by axio-context-sqlite (safe to run again)."""
    report = writing_db(ctx, lambda db: axio_importer(db).import_axio(path, replace=replace))
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"{len(report.added)} added, {len(report.updated)} updated, {len(report.unchanged)} unchanged"
        + (f", {len(report.replaced)} replaced" if report.replaced else "")
        + f"; {report.messages} message(s) written"
    )
    if report.conflicts:
        shown = ", ".join(report.conflicts[:5]) + (", ..." if len(report.conflicts) > 5 else "")
        say(
            f"{len(report.conflicts)} session(s) differ here and were left alone ({shown}); "
            "--replace overwrites them",
            err=True,
        )
