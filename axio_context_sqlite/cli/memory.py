"""Commands over the agent memory stores: collections, blobs, graph, tasks.

Each group lists when run alone (``axio-context blobs --prefix logs/``) and has a ``show``
command for one item; ``--json`` / ``--nl`` as everywhere. Every command opens the database,
makes one call on a store of :mod:`axio_context_sqlite.memory` and formats what it returns.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click
import msgspec

from axio_context.backends import MemoryStores
from axio_context.memory import BlobInfo, Document, Entity, Relationship, TaskList
from axio_context.memory.errors import BlobNotFoundError
from axio_context.memory.tasks import FINAL_STATUSES
from axio_context.memory.tasks_sql import UnreadableTaskWarning

from ..memory import MemoryStats
from .app import COUNT_MAX, cli, with_db
from .backends import OpenDatabase
from .options import Count, one_format, output_options
from .output import Column, echo_json, emit, human_size, local_time, one_line, say

__all__ = ["memory_stats_lines"]

T = TypeVar("T")


def _on(ctx: click.Context, call: Callable[[MemoryStores], Awaitable[T]]) -> T:
    """Open the database (never creating it) and make one store call."""

    async def go(db: OpenDatabase) -> T:
        return await call(db.memory_stores())

    return with_db(ctx, False, go)


def _limit_option(default: int) -> Callable[[Any], Any]:
    return click.option(
        "-n",
        "--limit",
        type=Count(0),
        default=default,
        show_default=True,
        help="At most N (0: all).",
    )


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _preview(text: str, width: int = 60) -> str:
    return " ".join(text.split())[:width]


# --- collections -----------------------------------------------------------------------------------


@cli.group(invoke_without_command=True)
@output_options
@click.pass_context
def collections(ctx: click.Context, as_json: bool, nl: bool) -> None:
    """Vector collections: name, dimension, embedder, documents."""
    if ctx.invoked_subcommand is not None:
        return
    one_format(as_json, nl)
    infos = _on(ctx, lambda m: m.vectors().list_collections())
    emit(
        [_plain(i) for i in infos],
        [
            Column("name", "NAME", 32),
            Column("dimension", "DIM", right=True),
            Column("embedder", "EMBEDDER", 32),
            Column("documents", "DOCS", right=True),
        ],
        as_json,
        nl,
    )


@collections.command("show")
@click.argument("name")
@_limit_option(20)
@output_options
@click.pass_context
def collections_show(ctx: click.Context, name: str, limit: int, as_json: bool, nl: bool) -> None:
    """The first documents of collection NAME, by id (without their embeddings)."""
    one_format(as_json, nl)
    docs: list[Document] = _on(ctx, lambda m: m.vectors().documents(name, limit=limit or COUNT_MAX))
    rows = [{"id": d.id, "content": d.content, "metadata": d.metadata} for d in docs]
    emit(
        rows,
        [Column("id", "ID", 24), Column("content", "CONTENT", 60), Column("metadata", "METADATA", 40)],
        as_json,
        nl,
        lambda: [
            {"id": d.id, "content": _preview(d.content), "metadata": msgspec.json.encode(d.metadata).decode()}
            for d in docs
        ],
    )


# --- blobs -----------------------------------------------------------------------------------------

_BLOB_COLUMNS = [
    Column("key", "KEY", 48),
    Column("size", "SIZE", right=True),
    Column("content_type", "TYPE", 32),
    Column("sha256", "SHA256", 12),
]


def _blob_row(info: BlobInfo) -> dict[str, Any]:
    row: dict[str, Any] = _plain(info)
    return row


@cli.group(invoke_without_command=True)
@click.option("--prefix", default="", help="Only keys starting with this.")
@_limit_option(100)
@output_options
@click.pass_context
def blobs(ctx: click.Context, prefix: str, limit: int, as_json: bool, nl: bool) -> None:
    """Blob store keys, by key: size, content type, SHA-256."""
    if ctx.invoked_subcommand is not None:
        return
    one_format(as_json, nl)
    infos = _on(ctx, lambda m: m.blobs().list_keys(prefix, limit=limit or None))
    emit(
        [_blob_row(i) for i in infos],
        _BLOB_COLUMNS,
        as_json,
        nl,
        lambda: [{**_blob_row(i), "size": human_size(i.size)} for i in infos],
    )


@blobs.command("show")
@click.argument("key")
@output_options(listing=False)
@click.pass_context
def blobs_show(ctx: click.Context, key: str, as_json: bool) -> None:
    """What is stored under KEY (not its bytes)."""
    info = _on(ctx, lambda m: m.blobs().stat(key))
    if info is None:
        raise click.ClickException(str(BlobNotFoundError(f"no blob under key {key!r}")))
    if as_json:
        echo_json(_plain(info))
        return
    for label, value in (
        ("key", info.key),
        ("size", f"{info.size:,} bytes"),
        ("type", info.content_type),
        ("sha256", info.sha256),
    ):
        say(f"{label:<7}{value}")


# --- graph -----------------------------------------------------------------------------------------


def _entity_row(e: Entity) -> dict[str, Any]:
    return {"id": e.id, "type": e.type, "properties": e.properties}


def _relationship_row(r: Relationship) -> dict[str, Any]:
    return {
        "id": r.id,
        "source_id": r.source_id,
        "target_id": r.target_id,
        "type": r.type,
        "properties": r.properties,
    }


@cli.group(invoke_without_command=True)
@output_options(listing=False)
@click.pass_context
def graph(ctx: click.Context, as_json: bool) -> None:
    """The graph store: entities and relationships, counted by type."""
    if ctx.invoked_subcommand is not None:
        return
    counts = _on(ctx, lambda m: m.graph().counts())
    if as_json:
        echo_json(_plain(counts))
        return
    say(f"entities       {counts.entities:,}")
    for t, n in counts.entity_types.items():
        say(f"  {one_line(t):<28} {n:>10,}")
    say(f"relationships  {counts.relationships:,}")
    for t, n in counts.relationship_types.items():
        say(f"  {one_line(t):<28} {n:>10,}")


@graph.command("entities")
@click.option("--type", "entity_type", help="Only entities of this type.")
@_limit_option(50)
@output_options
@click.pass_context
def graph_entities(ctx: click.Context, entity_type: str | None, limit: int, as_json: bool, nl: bool) -> None:
    """Entities by id."""
    one_format(as_json, nl)
    found = _on(ctx, lambda m: m.graph().entities(entity_type=entity_type, limit=limit or COUNT_MAX))
    rows = [_entity_row(e) for e in found]
    emit(
        rows,
        [Column("id", "ID", 32), Column("type", "TYPE", 24), Column("properties", "PROPERTIES", 60)],
        as_json,
        nl,
    )


@graph.command("show")
@click.argument("entity_id")
@click.option("--depth", type=click.IntRange(0, 20), default=1, show_default=True, help="Hops to walk.")
@click.option("--type", "types", multiple=True, help="Follow only relationships of this type (repeatable).")
@output_options(listing=False)
@click.pass_context
def graph_show(ctx: click.Context, entity_id: str, depth: int, types: tuple[str, ...], as_json: bool) -> None:
    """ENTITY_ID and its neighbours up to --depth hops, both directions."""
    sub = _on(
        ctx,
        lambda m: m.graph().get_neighbors(entity_id, depth=depth, relationship_types=list(types) or None),
    )
    if not sub.entities:
        raise click.ClickException(f"no entity {entity_id!r}")
    if as_json:
        echo_json(
            {
                "entities": [_entity_row(e) for e in sub.entities],
                "relationships": [_relationship_row(r) for r in sub.relationships],
            }
        )
        return
    emit(
        [_entity_row(e) for e in sub.entities],
        [Column("id", "ENTITY", 32), Column("type", "TYPE", 24)],
        False,
        False,
    )
    if sub.relationships:
        click.echo("")
        emit(
            [_relationship_row(r) for r in sub.relationships],
            [
                Column("source_id", "SOURCE", 24),
                Column("type", "RELATIONSHIP", 20),
                Column("target_id", "TARGET", 24),
            ],
            False,
            False,
        )


# --- tasks -----------------------------------------------------------------------------------------


def _board_row(b: TaskList) -> dict[str, Any]:
    done = sum(t.status in FINAL_STATUSES for t in b.tasks)
    return {
        "id": b.id,
        "conversation_id": b.conversation_id,
        "agent_id": b.agent_id,
        "agent_label": b.agent_label,
        "tasks": len(b.tasks),
        "finished": done,
        "created_at": b.created_at,
    }


@cli.group(invoke_without_command=True)
@click.option("--conversation", help="Only the boards of this conversation.")
@_limit_option(50)
@output_options
@click.pass_context
def tasks(ctx: click.Context, conversation: str | None, limit: int, as_json: bool, nl: bool) -> None:
    """Task boards, newest first: conversation, agent, tasks finished."""
    if ctx.invoked_subcommand is not None:
        return
    one_format(as_json, nl)

    async def call(m: MemoryStores) -> list[TaskList]:
        store = m.tasks()
        if conversation is not None:
            return await store.get_boards_by_conversation(conversation)
        return await store.list_task_lists(limit=limit or None)

    with warnings.catch_warnings(record=True) as unreadable:
        warnings.simplefilter("always", UnreadableTaskWarning)
        boards = _on(ctx, call)
    for w in unreadable:  # a board a newer version wrote: the others still show
        click.echo(f"warning: {one_line(str(w.message))}", err=True)
    emit(
        [_board_row(b) for b in boards],
        [
            Column("id", "BOARD", 36),
            Column("conversation_id", "CONVERSATION", 24),
            Column("agent_id", "AGENT", 16),
            Column("done", "DONE", right=True),
            Column("created", "CREATED"),
        ],
        as_json,
        nl,
        lambda: [
            {
                **_board_row(b),
                "done": f"{_board_row(b)['finished']}/{len(b.tasks)}",
                "created": local_time(b.created_at),
            }
            for b in boards
        ],
    )


@tasks.command("show")
@click.argument("board_id")
@output_options(listing=False)
@click.pass_context
def tasks_show(ctx: click.Context, board_id: str, as_json: bool) -> None:
    """The tasks of board BOARD_ID, in order."""
    board = _on(ctx, lambda m: m.tasks().get_task_list(board_id))
    if board is None:
        raise click.ClickException(f"no task board {board_id!r}")
    if as_json:
        echo_json(_plain(board))
        return
    label = f" ({one_line(board.agent_label)})" if board.agent_label else ""
    say(
        f"board {one_line(board.id)}: conversation {one_line(board.conversation_id)},"
        f" agent {one_line(board.agent_id or '(root)')}{label}"
    )
    say(f"max retries {board.max_retries}, created {local_time(board.created_at)}")
    click.echo("")
    emit(
        [
            {
                "order": t.order,
                "status": t.status.value,
                "retries": t.retry_count,
                "title": t.title,
                "note": t.note,
            }
            for t in board.tasks
        ],
        [
            Column("order", "#", right=True),
            Column("status", "STATUS", 12),
            Column("retries", "RETRIES", right=True),
            Column("title", "TITLE", 50),
            Column("note", "NOTE", 40),
        ],
        False,
        False,
    )


# --- stats -----------------------------------------------------------------------------------------


def memory_stats_lines(m: MemoryStats) -> list[str]:
    """The lines ``axio-context stats`` prints about the memory stores."""
    return [
        f"vectors    {m.documents:,} document(s) in {m.collections:,} collection(s),"
        f" {human_size(m.vector_bytes)}",
        f"blobs      {m.blob_keys:,} key(s), {human_size(m.blob_bytes)} of bytes"
        f" (keys and pieces {human_size(m.blob_key_bytes)})",
        f"graph      {m.entities:,} entities, {m.relationships:,} relationships, {human_size(m.graph_bytes)}",
        f"tasks      {m.tasks:,} task(s) on {m.task_lists:,} board(s), {human_size(m.task_bytes)}",
    ]
