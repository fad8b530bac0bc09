"""``browse`` (the terminal browser, the ``tui`` extra) and ``show --follow``'s loop: printing a
session's new messages as other processes append them, like ``tail -f``. Both run on a SQLite
file or a ``postgresql://`` database alike, through :class:`~..admin.live.Browsable`."""

from __future__ import annotations

import sys
from typing import Any

import click
import msgspec

from axio_context.errors import DatabaseLockedError
from axio_context.terminal import escaped_json
from axio_context.transcript import MessageRecord, render_blocks

from ..admin.live import Browsable
from .app import cli, read_db, settings_of
from .backends import OpenDatabase
from .options import chosen_project, project_option, session_argument
from .output import local_time, visible

__all__ = ["browse", "follow"]

_one_line_json = msgspec.json.Encoder()


def message_text(position: int, record: MessageRecord, fold: int) -> str:
    """One message as ``show`` prints it."""
    when = local_time(record.created_at)
    return f"## {position} · {record.role} · {when}\n\n{render_blocks(record.content, fold)}"


def message_json(position: int, record: MessageRecord) -> dict[str, Any]:
    """One message as ``show --json`` lists it."""
    return {"position": position, **msgspec.structs.asdict(record)}


def _emit(start: int, records: list[MessageRecord], fold: int, as_json: bool) -> None:
    for i, r in enumerate(records):
        if as_json:
            click.echo(escaped_json(_one_line_json.encode(message_json(start + i, r))))
        else:
            click.echo(visible(message_text(start + i, r, fold)))
    sys.stdout.flush()  # a pipe is block-buffered: each message is seen as it arrives


def live(db: OpenDatabase) -> Browsable:
    """``db`` as a browser reads it (its backend's :meth:`~axio_context.backends.OpenDatabase.browser`)."""
    return db.browser()


def follow(
    ctx: click.Context,
    session: str | None,
    last: int | None,
    fold: int,
    interval: float,
    as_json: bool,
) -> None:
    """Print the session's last ``last`` messages (None: all of them), then each new one as
    another process appends it, until Ctrl-C (exit code 0). ``as_json``: one JSON object a message."""
    locked_told = False

    def locked(exc: DatabaseLockedError) -> None:
        nonlocal locked_told
        if not locked_told:
            click.echo("the database is locked by another process; retrying", err=True)
            locked_told = True

    async def go(opened: OpenDatabase) -> None:
        nonlocal locked_told
        db = live(opened)
        sid = await db.resolve(session) if session else await db.latest("updated")
        count, _ = await db.messages(sid, 0, 0)
        start = 0 if last is None else max(0, count - last)
        _, records = await db.messages(sid, start)
        if not as_json:
            click.echo(visible(f"# {sid} (following: Ctrl-C stops)\n"))
        _emit(start, records, fold, as_json)
        async for update in db.follow(sid, start + len(records), interval=interval, on_locked=locked):
            if locked_told:
                click.echo("the database is available again", err=True)
                locked_told = False
            if update.reset:
                click.echo("(the session was rewritten by another process: all of it again)", err=True)
            _emit(update.start, update.messages, fold, as_json)

    try:
        read_db(ctx, go)
    except KeyboardInterrupt:
        # Ctrl-C is how following ends: quietly, like tail -f, with the output flushed
        ctx.exit(0)


@cli.command()
@session_argument(required=False)
@project_option
@click.option("--full", is_flag=True, help="Open transcripts with every message, not the model's view.")
@click.pass_context
def browse(ctx: click.Context, session: str | None, project: str | None, here: bool, full: bool) -> None:
    """Browse sessions in the terminal (needs the tui extra).

    Keys: Enter opens, / searches every session, t/p filter, f fork, r rename, d delete,
    e export, v full/model view, [ earlier messages, o unfold tool calls, Esc back, q quit.
    """
    scope = chosen_project(project, here)
    settings = settings_of(ctx)
    try:
        from ..tui import BrowserApp
    except ImportError as exc:
        raise click.ClickException(f"browse needs Textual ({exc}): pip install 'axio-context[tui]'") from None
    # a missing or empty file is the usual one-line error, before the screen is taken over
    read_db(ctx, lambda db: live(db).data_version())
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.ClickException("browse is a full-screen app: run it on a terminal, not with a pipe")
    BrowserApp(settings.target, project=scope, session=session, full=full, key=settings.key).run()
