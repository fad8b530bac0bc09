"""``axio-context blocks``: an agent's memory blocks (:mod:`axio_context.memory_blocks`).

Alone it lists the blocks (``--agent A``: the agent's own and the shared ones attached to it;
without: the shared blocks; ``--all``: every block). ``show``, ``history`` and ``diff`` read one;
``create``, ``set``, ``append``, ``replace``, ``update``, ``undo``, ``redo``, ``delete``,
``attach`` and ``detach`` change one, each one library call on the database's block store; a
write may name the version it read (``--expect N``) and is refused if the block moved on.
Stored text reaches the terminal only through :func:`~axio_context.terminal.visible`.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click
import msgspec

from axio_context.memory_blocks import DEFAULT_LIMIT, BlockStore, BlockVersion, MemoryBlock, StoredBlock
from axio_context.memory_blocks.transfer_sql import BlockRow, block_key

from .app import cli, read_db, with_db
from .backends import OpenDatabase
from .options import Count, one_format, output_options
from .output import Column, echo_json, emit, local_time, one_line, say

__all__ = ["blocks"]

T = TypeVar("T")

_agent = click.option(
    "--agent",
    "agent",
    default="",
    metavar="AGENT",
    help="The agent whose blocks (default: the shared blocks).",
)
_expect = click.option(
    "--expect", type=Count(1), default=None, metavar="N", help="Refuse unless the block is at version N."
)
_json = click.option("--json", "as_json", is_flag=True, help="Output a JSON object.")


def _on_blocks(call: Callable[[BlockStore], Awaitable[T]]) -> Callable[[OpenDatabase], Awaitable[T]]:
    async def go(db: OpenDatabase) -> T:
        return await call(db.memory_stores().blocks())

    return go


def _read(ctx: click.Context, call: Callable[[BlockStore], Awaitable[T]]) -> T:
    return read_db(ctx, _on_blocks(call))


def _write(ctx: click.Context, call: Callable[[BlockStore], Awaitable[T]]) -> T:
    return with_db(ctx, True, _on_blocks(call))


def _text(value: str) -> str:
    """An argument given as ``-``: the text on standard input."""
    return sys.stdin.read() if value == "-" else value


def _row(b: StoredBlock) -> dict[str, Any]:
    return msgspec.to_builtins(b)  # type: ignore[no-any-return]


def _summary(b: StoredBlock) -> dict[str, Any]:
    return {
        "label": b.label,
        "owner": b.agent_id or "(shared)",
        "version": b.version,
        "size": f"{len(b.value)}/{b.limit}",
        "ro": "yes" if b.read_only else "",
        "description": b.description,
        "updated": local_time(b.updated_at),
    }


_COLUMNS = [
    Column("label", "LABEL", 24),
    Column("owner", "OWNER", 16),
    Column("version", "VER", right=True),
    Column("size", "CHARS", right=True),
    Column("ro", "RO"),
    Column("description", "DESCRIPTION", 40),
    Column("updated", "UPDATED"),
]


def _shown(block: StoredBlock, as_json: bool, verb: str | None = None) -> None:
    if as_json:
        echo_json(_row(block))
        return
    if verb is not None:
        size = f"{len(block.value)}/{block.limit} chars"
        say(f"{verb} {one_line(block.label)}: version {block.version} ({size})")
        return
    owner = block.agent_id or "(shared)"
    say(f"label:       {one_line(block.label)}")
    say(f"owner:       {one_line(owner)}")
    if block.attached:
        say(f"attached:    {one_line(', '.join(block.attached))}")
    say(
        f"version:     {block.version}, {local_time(block.updated_at)} by {one_line(block.updated_by or '-')}"
    )
    say(f"chars:       {len(block.value)} of {block.limit}{', read-only' if block.read_only else ''}")
    if block.description:
        say(f"description: {one_line(block.description)}")
    say("")
    say(block.value)


@cli.group(invoke_without_command=True)
@_agent
@click.option("--all", "every", is_flag=True, help="Every block in the database, whoever owns it.")
@output_options
@click.pass_context
def blocks(ctx: click.Context, agent: str, every: bool, as_json: bool, nl: bool) -> None:
    """Memory blocks: labelled, versioned text an agent keeps in its context window."""
    if ctx.invoked_subcommand is not None:
        return
    one_format(as_json, nl)
    found = _read(ctx, lambda s: s.list_blocks(agent_id=None if every else agent))
    emit([_row(b) for b in found], _COLUMNS, as_json, nl, lambda: [_summary(b) for b in found])


@blocks.command("show")
@click.argument("label")
@_agent
@_json
@click.pass_context
def blocks_show(ctx: click.Context, label: str, agent: str, as_json: bool) -> None:
    """The block LABEL: its value and what it is."""
    _shown(_read(ctx, lambda s: s.get(label, agent_id=agent)), as_json)


@blocks.command("create")
@click.argument("label")
@click.argument("value", default="")
@_agent
@click.option("--limit", type=Count(1), default=DEFAULT_LIMIT, show_default=True, help="Its character limit.")
@click.option("--description", default="", help="What the block is for (the model reads it).")
@click.option("--read-only", is_flag=True, help="Refuse every edit of its value.")
@_json
@click.pass_context
def blocks_create(
    ctx: click.Context,
    label: str,
    value: str,
    agent: str,
    limit: int,
    description: str,
    read_only: bool,
    as_json: bool,
) -> None:
    """A new block LABEL holding VALUE ('-': standard input); --agent: the agent's own, else shared."""
    block = MemoryBlock(label, _text(value), limit=limit, description=description, read_only=read_only)
    _shown(_write(ctx, lambda s: s.create(block, agent_id=agent)), as_json, "created")


@blocks.command("set")
@click.argument("label")
@click.argument("value")
@_agent
@_expect
@_json
@click.pass_context
def blocks_set(
    ctx: click.Context, label: str, value: str, agent: str, expect: int | None, as_json: bool
) -> None:
    """Replace the whole value of LABEL by VALUE ('-': standard input)."""
    text = _text(value)
    _shown(_write(ctx, lambda s: s.set(label, text, agent_id=agent, expected_version=expect)), as_json, "set")


@blocks.command("append")
@click.argument("label")
@click.argument("text")
@_agent
@_expect
@_json
@click.pass_context
def blocks_append(
    ctx: click.Context, label: str, text: str, agent: str, expect: int | None, as_json: bool
) -> None:
    """Add TEXT on a new line at the end of LABEL ('-': standard input)."""
    more = _text(text)
    block = _write(ctx, lambda s: s.append(label, more, agent_id=agent, expected_version=expect))
    _shown(block, as_json, "appended to")


@blocks.command("replace")
@click.argument("label")
@click.argument("old")
@click.argument("new")
@_agent
@_expect
@_json
@click.pass_context
def blocks_replace(
    ctx: click.Context, label: str, old: str, new: str, agent: str, expect: int | None, as_json: bool
) -> None:
    """Replace the one occurrence of OLD in LABEL by NEW."""
    block = _write(ctx, lambda s: s.replace(label, old, new, agent_id=agent, expected_version=expect))
    _shown(block, as_json, "replaced in")


@blocks.command("update")
@click.argument("label")
@_agent
@click.option("--limit", type=Count(1), default=None, help="A new character limit.")
@click.option("--description", default=None, help="A new description.")
@click.option("--read-only/--writable", "read_only", default=None, help="Refuse edits, or allow them again.")
@_expect
@_json
@click.pass_context
def blocks_update(
    ctx: click.Context,
    label: str,
    agent: str,
    limit: int | None,
    description: str | None,
    read_only: bool | None,
    expect: int | None,
    as_json: bool,
) -> None:
    """Change LABEL's limit, description or read-only flag."""
    block = _write(
        ctx,
        lambda s: s.update(
            label,
            description=description,
            limit=limit,
            read_only=read_only,
            agent_id=agent,
            expected_version=expect,
        ),
    )
    _shown(block, as_json, "updated")


@blocks.command("history")
@click.argument("label")
@_agent
@output_options
@click.pass_context
def blocks_history(ctx: click.Context, label: str, agent: str, as_json: bool, nl: bool) -> None:
    """Every version of LABEL, oldest first: what changed, when, by which agent, in which run."""
    one_format(as_json, nl)
    versions: list[BlockVersion] = _read(ctx, lambda s: s.history(label, agent_id=agent))
    emit(
        [msgspec.to_builtins(v) for v in versions],
        [
            Column("version", "VER", right=True),
            Column("action", "ACTION"),
            Column("when", "WHEN"),
            Column("agent_id", "BY", 16),
            Column("run_id", "RUN", 12),
            Column("value", "VALUE", 48),
        ],
        as_json,
        nl,
        lambda: [
            {
                "version": v.version,
                "action": v.action,
                "when": local_time(v.created_at),
                "agent_id": v.agent_id,
                "run_id": v.run_id,
                "value": v.value,
            }
            for v in versions
        ],
    )


def _stepped(
    ctx: click.Context, label: str, agent: str, expect: int | None, as_json: bool, redo: bool
) -> None:
    def call(s: BlockStore) -> Awaitable[StoredBlock]:
        step = s.redo if redo else s.undo
        return step(label, agent_id=agent, expected_version=expect)

    _shown(_write(ctx, call), as_json, "redid" if redo else "undid the last change of")


@blocks.command("undo")
@click.argument("label")
@_agent
@_expect
@_json
@click.pass_context
def blocks_undo(ctx: click.Context, label: str, agent: str, expect: int | None, as_json: bool) -> None:
    """Restore LABEL as it was before its last change (a new version)."""
    _stepped(ctx, label, agent, expect, as_json, redo=False)


@blocks.command("redo")
@click.argument("label")
@_agent
@_expect
@_json
@click.pass_context
def blocks_redo(ctx: click.Context, label: str, agent: str, expect: int | None, as_json: bool) -> None:
    """Restore what the last undo of LABEL took back (a new version)."""
    _stepped(ctx, label, agent, expect, as_json, redo=True)


@blocks.command("diff")
@click.argument("label")
@click.argument("old", type=Count(1))
@click.argument("new", type=Count(1), required=False)
@_agent
@_json
@click.pass_context
def blocks_diff(ctx: click.Context, label: str, old: int, new: int | None, agent: str, as_json: bool) -> None:
    """A unified diff of LABEL's value from version OLD to NEW (default: the current one)."""
    diff = _read(ctx, lambda s: s.diff(label, old, new, agent_id=agent))
    if as_json:
        echo_json({"label": label, "from": old, "to": new, "diff": diff})
    elif diff:
        say(diff.rstrip("\n"))


@blocks.command("search")
@click.argument("words", nargs=-1, required=True)
@click.option("--agent", "agent", default=None, metavar="AGENT", help="Only the blocks this agent sees.")
@output_options
@click.pass_context
def blocks_search(
    ctx: click.Context, words: tuple[str, ...], agent: str | None, as_json: bool, nl: bool
) -> None:
    """The blocks whose label, description or value hold every one of WORDS (any case)."""
    one_format(as_json, nl)
    found = _read(ctx, lambda s: s.search(" ".join(words), agent_id=agent))
    emit([_row(b) for b in found], _COLUMNS, as_json, nl, lambda: [_summary(b) for b in found])


@blocks.command("delete")
@click.argument("label")
@_agent
@_expect
@_json
@click.pass_context
def blocks_delete(ctx: click.Context, label: str, agent: str, expect: int | None, as_json: bool) -> None:
    """Delete LABEL; its history stays (`blocks history`), and `blocks undo` brings it back."""
    gone = _write(ctx, lambda s: s.delete(label, agent_id=agent, expected_version=expect))
    if as_json:
        echo_json(_row(gone))
    else:
        say(f"deleted {one_line(gone.label)} (it was at version {gone.version})")


@blocks.command("attach")
@click.argument("label")
@click.argument("agent")
@_json
@click.pass_context
def blocks_attach(ctx: click.Context, label: str, agent: str, as_json: bool) -> None:
    """Show the shared block LABEL to AGENT too."""
    _shown(_write(ctx, lambda s: s.attach(label, agent)), as_json, f"attached to {one_line(agent)}:")


@blocks.command("detach")
@click.argument("label")
@click.argument("agent")
@click.pass_context
def blocks_detach(ctx: click.Context, label: str, agent: str) -> None:
    """Stop showing the shared block LABEL to AGENT."""
    was = _write(ctx, lambda s: s.detach(label, agent))
    say(f"{'detached' if was else 'was not attached:'} {one_line(label)} from {one_line(agent)}")


@blocks.command("export")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None, help="Write to FILE."
)
@click.pass_context
def blocks_export(ctx: click.Context, output: str | None) -> None:
    """Every block with its whole history and attachments, as JSON (stdout, or --output FILE)."""
    rows = _read(ctx, lambda s: s.dump())
    if output is None:
        echo_json(msgspec.to_builtins(rows))
    else:
        with open(output, "wb") as f:
            f.write(msgspec.json.format(msgspec.json.encode(rows), indent=2) + b"\n")
        say(f"exported {len(rows)} block(s) to {one_line(output)}")


@blocks.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--replace", is_flag=True, help="Replace a block already there (same id, or owner and label).")
@_json
@click.pass_context
def blocks_import(ctx: click.Context, file: str, replace: bool, as_json: bool) -> None:
    """Load the blocks a ``blocks export`` wrote, with their histories, as they were."""
    try:
        with open(file, "rb") as f:
            rows = msgspec.json.decode(f.read(), type=list[BlockRow])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise click.ClickException(f"{one_line(file)} is not a blocks export: {exc}") from None
    written = _write(ctx, lambda s: s.load(rows, replace=replace))
    kept = [block_key(r) for r, done in zip(rows, written, strict=True) if not done]
    if as_json:
        echo_json({"imported": sum(written), "kept": kept})
        return
    say(f"imported {sum(written)} block(s)")
    for key in kept:
        say(f"kept the block already there: {one_line(key)} (--replace to replace it)")
