"""``axio-context mcp``: the MCP server over stdio (:mod:`axio_context_mcp`, the ``mcp`` extra).

The SDK is imported only when the command runs, so the command line works without the extra and
says in one line how to install it."""

from __future__ import annotations

import asyncio
import contextlib

import click

from .app import cli, one_line_errors, settings_of


@cli.command("mcp")
@click.option(
    "--allow-write",
    is_flag=True,
    help="Also offer the tools that write (add_documents, edit_block); without it they are not listed.",
)
@click.pass_context
def mcp_(ctx: click.Context, allow_write: bool) -> None:
    """Serve the database to an MCP client over stdio (see docs/mcp.md).

    Tools: list_sessions, show_session, search_sessions (keyword, semantic, hybrid),
    list_collections, search_collection, list_blocks, show_block; with --allow-write also
    add_documents and edit_block. The database is opened on the first tool call, never created.
    """
    from axio_context_mcp import EXTRA_MISSING

    try:
        from axio_context_mcp.server import run_stdio
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types"):
            raise
        raise click.ClickException(EXTRA_MISSING) from None
    settings = settings_of(ctx)
    if settings.url is None and settings.explicit and not settings.path.expanduser().is_file():
        raise click.ClickException(f"no database at {settings.shown}")
    with one_line_errors(), contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_stdio(settings.target, allow_write=allow_write, key=settings.key))
