"""Options and arguments shared by several commands: session ids (with completion), dates,
projects and the output flags."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, overload

import click
from click.shell_completion import CompletionItem

from axio_context.backends import is_url, open_database
from axio_context.timepoints import parse_when

from .app import COUNT_MAX, Settings
from .backends import OpenDatabase

F = TypeVar("F", bound=Callable[..., Any])


def complete_sessions(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Session ids for shell completion (newest first for an empty prefix)."""
    root = ctx.find_root().params.get("db")
    where = str(root) if is_url(root) else (Path(root) if root else Settings(None).target)
    if isinstance(where, Path):
        where = where.expanduser()
        if not where.is_file():
            return []

    async def go() -> list[str]:
        async with open_database(where, readonly=True) as db:
            return await db.complete(incomplete)

    try:
        return [CompletionItem(i) for i in asyncio.run(go())]
    except Exception:  # completion must never break the shell
        return []


def session_argument(*, required: bool = True, nargs: int = 1) -> Callable[[Any], Any]:
    """A SESSION argument: a full id or a unique prefix, with shell completion."""
    return click.argument(
        "sessions" if nargs != 1 else "session",
        nargs=nargs,
        required=required,
        shell_complete=complete_sessions,
        metavar=("SESSION..." if nargs != 1 else "SESSION")
        if required
        else ("[SESSION]..." if nargs != 1 else "[SESSION]"),
    )


class When(click.ParamType):  # type: ignore[type-arg]
    """A point in time: ``2025-06-01``, ``2025-06-01T14:30`` (local unless it has an offset),
    or an age like ``30m``, ``12h``, ``7d``, ``2w`` (:func:`axio_context.timepoints.parse_when`)."""

    name = "when"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            return parse_when(str(value))
        except ValueError as exc:
            self.fail(str(exc))


def project_option(fn: Any) -> Any:
    fn = click.option("--here", is_flag=True, help="Only the project of the current directory.")(fn)
    return click.option(
        "--project",
        "-p",
        help="Only sessions of this project: a label, or a path (., ~/src/app, /abs/path/).",
    )(fn)


def sort_option(fn: Any) -> Any:
    """``--sort updated|created``: newest first by last activity (the default) or by creation."""
    return click.option(
        "--sort",
        type=click.Choice(["updated", "created"]),
        default="updated",
        show_default=True,
        help="Newest first by last activity (updated) or by creation (created).",
    )(fn)


def chosen_project(project: str | None, here: bool) -> str | None:
    if project and here:
        raise click.UsageError("--project and --here cannot be used together")
    return str(Path.cwd().resolve()) if here else project


async def stored_project(db: OpenDatabase, project: str | None) -> str | None:
    """The project as stored that ``project`` names (see :meth:`OpenDatabase.stored_project`)."""
    return await db.stored_project(project)


@overload
def output_options(fn: F, *, listing: bool = True, results: bool = False) -> F: ...
@overload
def output_options(fn: None = None, *, listing: bool = True, results: bool = False) -> Callable[[F], F]: ...
def output_options(
    fn: F | None = None, *, listing: bool = True, results: bool = False
) -> F | Callable[[F], F]:
    """The output flags, the same on every command that prints data.

    ``@output_options`` (a listing): ``--json`` prints a JSON array, ``--nl`` one JSON object
    per line. ``@output_options(listing=False)`` (a command that prints one thing): ``--json``
    prints one JSON object. ``@output_options(results=True)`` (search and similar): ``--json``
    prints one object, the hits and the notes on them (docs/cli.md gives its keys), ``--nl`` one
    hit per line.
    """

    def decorate(fn: F) -> F:
        if not listing:
            return click.option("--json", "as_json", is_flag=True, help="Output a JSON object.")(fn)
        if results:
            fn = click.option("--nl", is_flag=True, help="Output one JSON object per hit, one per line.")(fn)
            return click.option(
                "--json",
                "as_json",
                is_flag=True,
                help="Output one JSON object: hits, blocks, unindexed, why, not_embedded, fallback, "
                "withheld, notes (see docs/cli.md).",
            )(fn)
        fn = click.option("--nl", is_flag=True, help="Output one JSON object per line.")(fn)
        return click.option("--json", "as_json", is_flag=True, help="Output a JSON array.")(fn)

    return decorate if fn is None else decorate(fn)


class Count(click.IntRange):
    """A count from ``low`` up with no useful upper bound: ``--help`` shows ``[x>=low]``, not
    the technical ceiling (:data:`~.app.COUNT_MAX`) that keeps it inside SQLite's integers."""

    def __init__(self, low: int = 0) -> None:
        super().__init__(low, COUNT_MAX)

    def _describe_range(self) -> str:
        return f"x>={self.min}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.INT.convert(value, param, ctx)
        if number > COUNT_MAX:
            self.fail(f"{number} is too large.", param, ctx)
        return super().convert(number, param, ctx)


def one_format(as_json: bool, nl: bool) -> None:
    """Refuse ``--json`` with ``--nl`` (before any work is done)."""
    if as_json and nl:
        raise click.UsageError("--json and --nl cannot be used together")
