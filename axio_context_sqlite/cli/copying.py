"""``axio-context copy SRC DST``: everything from one database to another (a file or a
postgresql:// URL on either side): the sessions, then usage, memory stores, context pools,
resumable state and conversation records; lossless, idempotent and resumable."""

from __future__ import annotations

import asyncio
import contextlib

import click

from axio_context.copying import CopyAllReport, copy_all

from .app import cli, one_line_errors, settings_of
from .backends import opener
from .options import output_options
from .output import StageProgress, echo_json, one_line, say


@cli.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--dry-run", is_flag=True, help="Count what would be copied; write nothing.")
@output_options(listing=False)
@click.pass_context
def copy(ctx: click.Context, src: str, dst: str, dry_run: bool, as_json: bool) -> None:
    """Copy what SRC has and DST lacks (files or postgresql:// URLs): sessions, usage, memory
    stores, memory blocks, queues and pools, saved state, conversation records. Run again to resume; an item
    on both sides with different content is refused (exit 1), never overwritten."""
    progress = StageProgress()

    async def go() -> CopyAllReport:
        async with contextlib.AsyncExitStack() as stack:
            # --key-file (or the environment's key) opens both sides: files and servers alike
            key = settings_of(ctx).key
            source = await stack.enter_async_context(opener(src, key, create=False))
            target = await stack.enter_async_context(opener(dst, key, create=not dry_run))
            return await copy_all(source, target, progress, dry_run=dry_run)

    try:
        with one_line_errors():
            report = asyncio.run(go())
    finally:
        progress.close()
    s = report.sessions
    if as_json:
        echo_json(
            {
                "copied": s.copied,
                "already": s.already,
                "messages": s.messages,
                "dry_run": dry_run,
                "embedded": report.embedded,
                "not_embedded": report.not_embedded,
                "layers": {
                    name: {"copied": r.copied, "already": r.already, "conflicts": r.conflicts}
                    for name, r in report.layers.items()
                },
            }
        )
    else:
        verb = "would copy" if dry_run else "copied"
        click.echo(f"{verb} {s.copied} session(s), {s.messages} message(s); {s.already} already there")
        for name, r in report.layers.items():
            if r.copied or r.already or r.conflicts:
                refused = f", {len(r.conflicts)} refused" if r.conflicts else ""
                say(f"{name}: {verb} {r.copied}, {r.already} already there{refused}")
        if report.embedded:
            say(f"embedded {report.embedded} copied message(s) with the source's embedder")
    if report.not_embedded is not None:
        say(f"note: {report.not_embedded}", err=True)
    for line in report.conflicts:
        say(f"Error: {one_line(line)}", err=True)
    if report.conflicts:
        ctx.exit(1)
