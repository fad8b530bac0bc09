"""Commands over sessions: list-sessions, show, fork, rm, rename, title."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click
import msgspec

from axio_context.transcript import message_range, render_blocks, render_header

from ..database import Database
from ..store.listing import SessionPage
from .app import COUNT_MAX, cli, settings_of, with_db
from .options import (
    When,
    chosen_project,
    one_format,
    output_options,
    project_option,
    session_argument,
    stored_project,
)
from .output import (
    SESSION_COLUMNS,
    echo_json,
    emit,
    info_dict,
    info_row,
    local_time,
    shown_for_infos,
    visible,
)


@cli.command("list-sessions")
@project_option
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(0, COUNT_MAX),
    default=50,
    show_default=True,
    help="At most N (0: all).",
)
@click.option("--since", type=When(), help="Only sessions created since (a date, or an age like 7d).")
@output_options
@click.pass_context
def list_sessions(
    ctx: click.Context,
    project: str | None,
    here: bool,
    limit: int,
    since: datetime | None,
    as_json: bool,
    nl: bool,
) -> None:
    """List sessions, newest first."""
    settings = settings_of(ctx)
    scope = chosen_project(project, here)
    one_format(as_json, nl)
    if not settings.explicit and not settings.path.exists():
        # A fresh machine: nothing stored yet is not an error (an explicit --db that is missing is).
        if as_json:
            click.echo("[]")
        elif not nl:
            click.echo(f"no sessions yet (database: {settings.path})")
        return

    async def go(db: Database) -> tuple[SessionPage, dict[str, str], bool]:
        page = await db.list_sessions(await stored_project(db, scope), limit=limit or None, since=since)
        filtered = (scope is not None or since is not None) and not page.sessions
        others = filtered and bool((await db.list_sessions(limit=1)).sessions)
        return page, {} if as_json or nl else await shown_for_infos(db, page.sessions), others

    page, shown, others = with_db(ctx, False, go)
    infos = page.sessions
    if not infos and not (as_json or nl):
        what = "no session matches the filters" if others else "no sessions yet"
        click.echo(f"{what} (database: {settings.path})")
        return
    rows = [info_dict(i) for i in infos]
    emit(rows, SESSION_COLUMNS, as_json, nl, lambda: [info_row(i, shown) for i in infos])
    if page.next_cursor is not None:  # on stderr, so --json and --nl output stays as it is
        click.echo(f"(the newest {limit}; -n 0 lists all)", err=True)


async def _pick(db: Database, session: str | None) -> str:
    return await db.resolve(session) if session else await db.latest()


@cli.command()
@session_argument(required=False)
@click.option("--full", is_flag=True, help="Every message, including those a compaction summarised.")
@click.option(
    "--fold",
    type=click.IntRange(min=20),
    default=600,
    show_default=True,
    help="Cut tool calls/results to N characters.",
)
@click.option("--json", "as_json", is_flag=True, help="Output JSON.")
@click.pass_context
def show(ctx: click.Context, session: str | None, full: bool, fold: int, as_json: bool) -> None:
    """Show a conversation (default: the newest session)."""

    async def go(db: Database) -> Any:
        return await db.show(await _pick(db, session), full=full)

    view = with_db(ctx, False, go)
    if as_json:
        messages = [
            {"position": view.start + i, **msgspec.structs.asdict(m)} for i, m in enumerate(view.messages)
        ]
        doc = {"session": view.header, "summary": view.summary, "start": view.start, "messages": messages}
        echo_json(doc)
        return
    out = [render_header(view.header)]
    if view.summary is not None:
        out.append(
            f"*Compacted: {message_range(view.start)} replaced by this summary in the model's view "
            "(--full shows everything).*\n"
        )
        for m in view.summary:
            out.append(f"## summary · {m.role}\n\n{render_blocks(m.content, fold)}")
    for i, r in enumerate(view.messages):
        when = local_time(r.created_at)
        out.append(f"## {view.start + i} · {r.role} · {when}\n\n{render_blocks(r.content, fold)}")
    click.echo(visible("\n".join(out)), nl=False)


@cli.command()
@session_argument()
@click.option("--id", "new_id", help="Id for the new session (default: a new uuid).")
@click.pass_context
def fork(ctx: click.Context, session: str, new_id: str | None) -> None:
    """Fork a session; prints the new session's id."""
    if new_id is not None and not new_id:
        raise click.ClickException("a session id must not be empty")

    async def go(db: Database) -> str:
        return await db.fork(await db.resolve(session), new_id)

    click.echo(visible(with_db(ctx, False, go)))


@cli.command()
@session_argument(nargs=-1)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def rm(ctx: click.Context, sessions: tuple[str, ...], yes: bool) -> None:
    """Delete sessions (their forks keep their messages)."""
    ids = with_db(ctx, False, lambda db: _resolve_all(db, sessions))
    if not yes:
        click.confirm(f"Delete {len(ids)} session(s): {visible(', '.join(ids))}?", abort=True, err=True)
    deleted = with_db(ctx, False, lambda db: db.delete(ids))
    click.echo(f"deleted {len(deleted)} session(s)")


async def _resolve_all(db: Database, sessions: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([await db.resolve(s) for s in sessions]))


@cli.command()
@session_argument()
@click.argument("new_id")
@click.pass_context
def rename(ctx: click.Context, session: str, new_id: str) -> None:
    """Change a session's id."""

    async def go(db: Database) -> str:
        old = await db.resolve(session)
        await db.rename(old, new_id)
        return old

    old = with_db(ctx, False, go)
    click.echo(visible(f"renamed {old} to {new_id}"))


@cli.command()
@session_argument()
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the title.")
@click.pass_context
def title(ctx: click.Context, session: str, text: str | None, clear: bool) -> None:
    """Show, set or clear a session's title."""
    if clear and text is not None:
        raise click.UsageError("give TEXT or --clear, not both")

    async def go(db: Database) -> str | None:
        sid = await db.resolve(session)
        if text is None and not clear:
            return (await db.info(sid)).title
        await db.set_title(sid, None if clear else text)
        return None

    shown = with_db(ctx, False, go)
    if text is None and not clear and shown is not None:
        click.echo(visible(shown))
