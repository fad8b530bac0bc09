"""``axio-context pools``: the context queues and pools in the database, and one with its items.

Run alone it lists them (name, kind, limit, items, the branch they came from); ``pools show
NAME`` prints one with its items. ``--json`` / ``--nl`` as everywhere. Hooks are shown by name
and never imported: the hook code need not exist where the command runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click
import msgspec

from ..pools import PoolInfo
from .app import COUNT_MAX, cli, with_db
from .backends import OpenDatabase
from .options import Count, one_format, output_options
from .output import Column, echo_json, emit, local_time, one_line, say

__all__ = ["pools"]

T = TypeVar("T")


def _on(ctx: click.Context, call: Callable[[OpenDatabase], Awaitable[T]]) -> T:
    return with_db(ctx, False, call)


def _row(info: PoolInfo) -> dict[str, Any]:
    row: dict[str, Any] = msgspec.to_builtins(info)
    return row


def _preview(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return " ".join(text.split())[:width]


@cli.group(invoke_without_command=True)
@click.option("--kind", type=click.Choice(["queue", "pool"]), help="Only queues, or only pools.")
@output_options
@click.pass_context
def pools(ctx: click.Context, kind: str | None, as_json: bool, nl: bool) -> None:
    """Context queues and pools: name, kind, limit, items, parent branch."""
    if ctx.invoked_subcommand is not None:
        return
    one_format(as_json, nl)
    infos = _on(ctx, lambda db: db.list_pools(kind))
    emit(
        [_row(i) for i in infos],
        [
            Column("name", "NAME", 32),
            Column("kind", "KIND"),
            Column("limit", "LIMIT", right=True),
            Column("size", "ITEMS", right=True),
            Column("parent", "PARENT", 32),
            Column("updated", "UPDATED"),
        ],
        as_json,
        nl,
        lambda: [
            {
                **_row(i),
                "limit": "-" if i.limit is None else i.limit,
                "parent": i.parent or "",
                "updated": local_time(i.updated_at),
            }
            for i in infos
        ],
    )


@pools.command("show")
@click.argument("name")
@click.option("-n", "--limit", type=Count(0), default=50, show_default=True, help="At most N items (0: all).")
@output_options(listing=False)
@click.pass_context
def pools_show(ctx: click.Context, name: str, limit: int, as_json: bool) -> None:
    """Queue or pool NAME and its items (a queue oldest first, a pool in insertion order)."""
    view = _on(
        ctx,
        lambda db: db.show_pool(name, limit=limit or COUNT_MAX),
    )
    if as_json:
        echo_json(msgspec.to_builtins(view))
        return
    info = view.info
    say(
        f"{info.kind} {one_line(info.name)}: {info.size:,} items,"
        f" limit {'-' if info.limit is None else info.limit}"
    )
    if info.parent:
        say(f"branch of {one_line(info.parent)}")
    if info.tags:
        say(f"tags     {', '.join(map(one_line, info.tags))}")
    for event, names in info.hooks.items():
        say(f"hook     {one_line(event)}: {', '.join(map(one_line, names))}")
    say(f"updated  {local_time(info.updated_at)}")
    click.echo("")
    emit(
        [msgspec.to_builtins(i) for i in view.items],
        [Column("id", "ID", 24), Column("description", "DESCRIPTION", 48), Column("content", "CONTENT", 60)],
        False,
        False,
        lambda: [
            {"id": i.id or "", "description": i.description or "", "content": _preview(i.content)}
            for i in view.items
        ],
    )
