"""``axio-context info``: which database is in use and why, and what is there, read-only."""

from __future__ import annotations

import asyncio

import click

from axio_context.backends import backend_for

from ..dbinfo import describe_database
from ..paths import PathSource
from .app import cli, one_line_errors, settings_of
from .options import output_options
from .output import echo_json, human_size, visible

#: How each source of the path reads in the table.
_SOURCES = {
    "argument": "--db",
    "environment": "$AXIO_CONTEXT_DB",
    "default": "default (the user data directory)",
}


@cli.command()
@output_options(listing=False)
@click.pass_context
def info(ctx: click.Context, as_json: bool) -> None:
    """The database in use and where its path came from; versions and sqlite-vec. Creates nothing."""
    settings = settings_of(ctx)
    if settings.url is not None:
        _postgres_info(settings.url, _SOURCES[settings.source.value], as_json)
        return
    # --db is passed as given; $AXIO_CONTEXT_DB and the default are the library's own answer.
    with one_line_errors():
        d = asyncio.run(
            describe_database(settings.path if settings.source is PathSource.ARGUMENT else None, settings.key)
        )
    if as_json:
        echo_json(d)
        return
    size = human_size(d.file_bytes) + (f" (+ {human_size(d.wal_bytes)} WAL)" if d.wal_bytes else "")
    schema = "-" if d.schema_version is None else str(d.schema_version)
    lines = [
        f"database        {d.path}",
        f"from            {_SOURCES[d.source]}",
        f"exists          {'yes' if d.exists else 'no'}",
        f"size            {size if d.exists else '-'}",
        f"schema version  {schema} (this axio-context: {d.supported_schema_version})",
        f"axio-context    {d.library_version}",
        f"sqlite-vec      {'loaded' if d.sqlite_vec else 'unavailable on this platform'}",
    ]
    if d.note:
        lines.append(f"note            {d.note}")
    click.echo(visible("\n".join(lines)))


def _postgres_info(url: str, source: str, as_json: bool) -> None:
    """``info`` for a postgresql:// database (the postgres extra)."""
    with one_line_errors():
        d = asyncio.run(backend_for(url).describe(url))
    if as_json:
        echo_json({**d, "source": source})
        return
    click.echo(
        visible("\n".join([f"{k.replace('_', ' '):24s} {v}" for k, v in {**d, "from": source}.items()]))
    )
