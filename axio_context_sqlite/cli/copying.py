"""``axio-context copy SRC DST``: every session from one database to another (a file or a
postgresql:// URL on either side), lossless, idempotent and resumable."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import click

from .app import cli, one_line_errors
from .backends import PostgresExtraMissingError, opener
from .options import output_options
from .output import Progress, echo_json


@cli.command("copy")
@click.argument("src")
@click.argument("dst")
@output_options(listing=False)
def copy(src: str, dst: str, as_json: bool) -> None:
    """Copy the sessions SRC has and DST lacks (files or postgresql:// URLs); run again to resume."""
    try:
        from axio_context_postgres.copying import copy_sessions
    except ImportError as exc:
        missing = PostgresExtraMissingError(
            f"copy needs the postgres extra: pip install 'axio-context[postgres]' ({exc})"
        )
        raise click.ClickException(str(missing)) from None
    progress = Progress()

    async def go() -> Any:
        async with contextlib.AsyncExitStack() as stack:
            source = await stack.enter_async_context(opener(src, create=False))
            target = await stack.enter_async_context(opener(dst))
            return await copy_sessions(source, target, progress)

    try:
        with one_line_errors():
            report = asyncio.run(go())
    finally:
        progress.close()
    if as_json:
        echo_json({"copied": report.copied, "already": report.already, "messages": report.messages})
        return
    click.echo(
        f"copied {report.copied} session(s), {report.messages} message(s); {report.already} already there"
    )
