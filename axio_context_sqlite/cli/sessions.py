"""Commands over sessions: list-sessions, show, fork, rm, rename, title."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click
import msgspec

from axio_context.messages import SessionInfo
from axio_context.transcript import message_range, render_blocks, render_header
from axio_context.views import SessionSort

from ..store.listing import SessionPage
from .agent_filters import agent_options, tag_filters
from .app import cli, no_sessions_yet, read_db, settings_of, with_db
from .backends import OpenDatabase
from .browsing import follow as following
from .options import (
    Count,
    When,
    chosen_project,
    one_format,
    output_options,
    project_option,
    session_argument,
    sort_option,
    stored_project,
)
from .output import (
    AGENT_COLUMN,
    SESSION_COLUMNS,
    echo_json,
    emit,
    info_dict,
    info_row,
    local_time,
    page,
    say,
    shown_for_infos,
    visible,
    with_agent,
)
from .state import list_tree


@cli.command("list-sessions")
@project_option
@click.option(
    "-n",
    "--limit",
    type=Count(0),
    default=50,
    show_default=True,
    help="At most N (0: all).",
)
@click.option("--since", type=When(), help="Only sessions created since (a date, or an age like 7d).")
@click.option(
    "--tree", is_flag=True, help="Subagent sessions and forks under their parents (-n counts roots)."
)
@sort_option
@agent_options("sessions")
@output_options
@click.pass_context
def list_sessions(
    ctx: click.Context,
    project: str | None,
    here: bool,
    limit: int,
    since: datetime | None,
    tree: bool,
    sort: SessionSort,
    agent_id: str | None,
    run_id: str | None,
    as_json: bool,
    nl: bool,
) -> None:
    """List sessions, the last active first (an agent's sessions with their agent and thread)."""
    settings = settings_of(ctx)
    scope = chosen_project(project, here)
    one_format(as_json, nl)
    if tree:
        list_tree(ctx, scope, limit or None, since, as_json, nl, sort)
        return
    agents: dict[str, tuple[str, str]] = {}

    async def go(db: OpenDatabase) -> tuple[SessionPage, dict[str, str], bool] | None:
        tags = tag_filters(db, agent_id, run_id)
        page = await db.list_sessions(
            await stored_project(db, scope), limit=limit or None, since=since, sort=sort, **tags
        )
        agents.update(await db.agents_of([i.session_id for i in page.sessions]))
        filtered = (scope is not None or since is not None or bool(tags)) and not page.sessions
        others = filtered and bool((await db.list_sessions(limit=1)).sessions)
        return page, {} if as_json or nl else await shown_for_infos(db, page.sessions), others

    # A fresh machine (no default database yet) or an empty file: nothing stored yet is not an
    # error (an explicit --db that is missing is), and reading it creates or writes nothing.
    found = read_db(ctx, go, absent=lambda: None)
    if found is None:
        if as_json:
            click.echo("[]")
        elif not nl:
            say(f"no sessions yet (database: {settings.shown})")
        return
    page, shown, others = found
    infos = page.sessions
    if not infos and not (as_json or nl):
        what = "no session matches the filters" if others else "no sessions yet"
        say(f"{what} (database: {settings.shown})")
        return
    rows = [with_agent(info_dict(i), agents.get(i.session_id)) for i in infos]
    columns = [*SESSION_COLUMNS, AGENT_COLUMN] if agents else SESSION_COLUMNS
    emit(
        rows,
        columns,
        as_json,
        nl,
        lambda: [with_agent(info_row(i, shown), agents.get(i.session_id)) for i in infos],
    )
    if page.next_cursor is not None:  # on stderr, so --json and --nl output stays as it is
        newest = "last active" if sort == "updated" else "newest"
        click.echo(f"(the {newest} {limit}; -n 0 lists all)", err=True)


async def _pick(db: OpenDatabase, session: str | None) -> str:
    return await db.resolve(session) if session else await db.latest("updated")


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
@click.option("--last", "--tail", "last", type=Count(1), help="Only the last N messages.")
@click.option("--no-pager", is_flag=True, help="Never page the output (it is paged only on a terminal).")
@click.option(
    "--agent", "agent_id", metavar="ID", help="SESSION is a thread id: show this agent's conversation in it."
)
@click.option("--run", "run_id", metavar="ID", help="Only the messages of this agent run.")
@click.option(
    "-F",
    "--follow",
    is_flag=True,
    help="Keep printing new messages as they are appended, like tail -f (--json: one per line).",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01, max=3600),
    default=0.5,
    show_default=True,
    help="With --follow: seconds between checks for new messages.",
)
@output_options(listing=False)
@click.pass_context
def show(
    ctx: click.Context,
    session: str | None,
    full: bool,
    fold: int,
    last: int | None,
    no_pager: bool,
    agent_id: str | None,
    run_id: str | None,
    follow: bool,
    interval: float,
    as_json: bool,
) -> None:
    """Show a conversation (default: the last active session); --follow keeps printing new messages."""
    if agent_id is not None and session is None:
        raise click.UsageError("--agent needs the SESSION (thread id) the agent worked in")
    if follow:
        if agent_id is not None or run_id is not None:
            raise click.UsageError("--follow takes a SESSION, not --agent/--run")
        following(ctx, session, None if full else (10 if last is None else last), fold, interval, as_json)
        return

    async def go(db: OpenDatabase) -> Any:
        tags = tag_filters(db, agent_id, run_id)
        if agent_id is not None and session is not None:
            picked = await db.agent_session(agent_id, session)
        elif session is None and not (await db.list_sessions(limit=1)).sessions:
            return None  # nothing stored yet: not an error
        else:
            picked = await _pick(db, session)
        return await db.show(picked, full=full, **({"run_id": run_id} if "run_id" in tags else {}))

    def absent() -> None:
        if session is not None:  # one was named: there is none of that name
            raise click.ClickException(
                visible(f"no session {session!r}: no sessions yet (database: {settings_of(ctx).shown})")
            )

    view = read_db(ctx, go, absent=absent)
    if view is None:
        if as_json:
            click.echo("null")
        else:
            no_sessions_yet(ctx)
        return
    messages, start, summary = view.messages, view.start, view.summary
    positions = getattr(view, "positions", None) or list(range(start, start + len(messages)))
    runs: list[str] = getattr(view, "runs", None) or [""] * len(messages)
    if last is not None and last < len(messages):
        # Only the tail: the summary stands before the first message shown, so it goes too.
        start, messages, summary = positions[-last], messages[-last:], None
        positions, runs = positions[-last:], runs[-last:]
    if as_json:
        rows = [
            {"position": p, **({"run_id": r} if r else {}), **msgspec.structs.asdict(m)}
            for p, r, m in zip(positions, runs, messages, strict=True)
        ]
        doc = {"session": view.header, "summary": summary, "start": start, "messages": rows}
        if view.hidden:
            doc.update(hidden=view.hidden)
        if getattr(view, "agent_id", None) is not None:
            doc.update(agent_id=view.agent_id, thread_id=view.thread_id)
        echo_json(doc)
        return
    out = [render_header(view.header, view.hidden)]
    if getattr(view, "agent_id", None) is not None:
        out.append(f"agent {view.agent_id!r} · thread {view.thread_id!r}\n")
    if summary is not None:
        out.append(
            f"*Compacted: {message_range(view.start)} replaced by this summary in the model's view "
            "(--full shows everything).*\n"
        )
        for m in summary:
            out.append(f"## summary · {m.role}\n\n{render_blocks(m.content, fold)}")
    for p, run, r in zip(positions, runs, messages, strict=True):
        when = local_time(r.created_at) + (f" · run {run}" if run else "")
        out.append(f"## {p} · {r.role} · {when}\n\n{render_blocks(r.content, fold)}")
    page(visible("\n".join(out)), no_pager)


@cli.command()
@session_argument()
@click.option("--id", "new_id", help="Id for the new session (default: a new uuid).")
@output_options(listing=False)
@click.pass_context
def fork(ctx: click.Context, session: str, new_id: str | None, as_json: bool) -> None:
    """Fork a session; prints the new session's id."""
    if new_id is not None and not new_id:
        raise click.ClickException("a session id must not be empty")

    async def go(db: OpenDatabase) -> SessionInfo:
        return await db.info(await db.fork(await db.resolve(session), new_id))

    info = with_db(ctx, False, go)
    if as_json:
        echo_json(info_dict(info))
        return
    click.echo(visible(info.session_id))


@cli.command()
@session_argument(nargs=-1)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@output_options
@click.pass_context
def rm(ctx: click.Context, sessions: tuple[str, ...], yes: bool, as_json: bool, nl: bool) -> None:
    """Delete sessions (their forks keep their messages)."""
    one_format(as_json, nl)
    infos = with_db(ctx, False, lambda db: _resolve_all(db, sessions))
    ids = [i.session_id for i in infos]
    if not yes and not click.confirm(f"Delete {len(ids)} session(s): {visible(', '.join(ids))}?", err=True):
        click.echo("nothing deleted", err=True)  # a refusal is an answer, not an error
        return
    deleted = set(with_db(ctx, False, lambda db: db.delete(ids)))
    if as_json or nl:
        emit([info_dict(i) for i in infos if i.session_id in deleted], SESSION_COLUMNS, as_json, nl)
        return
    click.echo(f"deleted {len(deleted)} session(s)")


async def _resolve_all(db: OpenDatabase, sessions: Sequence[str]) -> list[SessionInfo]:
    ids = list(dict.fromkeys([await db.resolve(s) for s in sessions]))
    return [await db.info(i) for i in ids]


@cli.command()
@session_argument()
@click.argument("new_id")
@output_options(listing=False)
@click.pass_context
def rename(ctx: click.Context, session: str, new_id: str, as_json: bool) -> None:
    """Change a session's id."""

    async def go(db: OpenDatabase) -> tuple[str, SessionInfo]:
        old = await db.resolve(session)
        await db.rename(old, new_id)
        return old, await db.info(new_id)

    old, info = with_db(ctx, False, go)
    if as_json:
        echo_json({"previous_id": old, **info_dict(info)})
        return
    click.echo(visible(f"renamed {old} to {new_id}"))


@cli.command()
@session_argument()
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the title.")
@output_options(listing=False)
@click.pass_context
def title(ctx: click.Context, session: str, text: str | None, clear: bool, as_json: bool) -> None:
    """Show, set or clear a session's title."""
    if clear and text is not None:
        raise click.UsageError("give TEXT or --clear, not both")

    async def go(db: OpenDatabase) -> tuple[str, str | None]:
        sid = await db.resolve(session)
        if text is not None or clear:
            await db.set_title(sid, None if clear else text)
        return sid, (await db.info(sid)).title

    reading = text is None and not clear
    sid, shown = read_db(ctx, go) if reading else with_db(ctx, False, go)
    if as_json:
        echo_json({"session_id": sid, "title": shown})
        return
    if reading and shown is not None:
        click.echo(visible(shown))
