"""The session tree and stored agent states: ``list-sessions --tree`` (rendered here) and
``state`` (what ``save_state`` stored with a session)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import click

from axio_context.backends import StoredStateView
from axio_context.views import SessionNode, SessionSort

from .app import cli, read_db, settings_of
from .backends import OpenDatabase
from .options import output_options, session_argument
from .output import SESSION_COLUMNS, echo_json, emit, info_dict, info_row, local_time, say, shown_ids, visible


def _walk(
    nodes: list[SessionNode], depth: int = 0, under: str | None = None
) -> Iterator[tuple[SessionNode, int, str | None]]:
    for node in nodes:
        yield node, depth, under
        yield from _walk(node.children, depth + 1, node.info.session_id)


def _nested(node: SessionNode) -> dict[str, Any]:
    return {
        **info_dict(node.info),
        "kind": node.kind,
        "agent_name": node.agent_name,
        "children": [_nested(c) for c in node.children],
    }


def list_tree(
    ctx: click.Context,
    project: str | None,
    limit: int | None,
    since: datetime | None,
    as_json: bool,
    nl: bool,
    sort: SessionSort = "updated",
) -> None:
    """``list-sessions --tree``: root sessions newest first (by ``sort``), subagent sessions and
    forks under them."""

    async def go(db: OpenDatabase) -> tuple[list[SessionNode], dict[str, str]]:
        scope = await db.stored_project(project)
        nodes = await db.lineage_tree(scope, limit=limit, since=since, sort=sort)
        if as_json or nl:
            return nodes, {}
        ids = [x for n, _, _ in _walk(nodes) for x in (n.info.session_id, n.info.parent_id)]
        return nodes, await shown_ids(db, ids)

    nodes, shown = read_db(ctx, go, absent=lambda: ([], {}))
    if as_json:
        echo_json([_nested(n) for n in nodes])
        return
    flat = list(_walk(nodes))
    if nl:
        rows = [
            {**info_dict(n.info), "kind": n.kind, "agent_name": n.agent_name, "depth": d, "under": u}
            for n, d, u in flat
        ]
        emit(rows, SESSION_COLUMNS, False, True)
        return
    if not flat:
        say(f"no sessions yet (database: {settings_of(ctx).shown})")
        return

    def table() -> list[dict[str, Any]]:
        out = []
        for node, depth, _ in flat:
            row = info_row(node.info, shown)
            mark = {"subagent": f"[{node.agent_name}] ", "fork": "[fork] "}.get(node.kind, "")
            row["id"] = "  " * depth + mark + visible(row["id"])
            out.append(row)
        return out

    emit([], SESSION_COLUMNS, False, False, table)


@cli.command("state")
@session_argument(required=True)
@output_options(listing=False)
@click.pass_context
def state(ctx: click.Context, session: str, as_json: bool) -> None:
    """Show the agent state saved with a session (its subagents are sessions of their own)."""

    async def go(db: OpenDatabase) -> tuple[str, StoredStateView | None]:
        sid = await db.resolve(session)
        return sid, await db.load_stored(sid)

    sid, stored = read_db(ctx, go)
    if stored is None:
        raise click.ClickException(f"no agent state is saved with session {sid!r}")
    if as_json:
        echo_json(
            {
                "session_id": stored.session_id,
                "type": stored.type,
                "saved_at": stored.saved_at,
                "subagents": stored.subagents,
                "state": stored.state,
            }
        )
        return
    saved = local_time(datetime.fromtimestamp(stored.saved_at / 1000).astimezone().isoformat())
    lines = [f"session {sid} · {stored.type} · saved {saved}"]
    for name, child in stored.subagents.items():
        lines.append(f"subagent {name}: session {child}")
    for key, value in stored.state.items():
        if value not in ({}, [], None):
            lines.append(f"{key}: {value}")
    click.echo(visible("\n".join(lines)))
