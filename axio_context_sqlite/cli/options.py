"""Options and arguments shared by several commands: session ids (with completion), dates,
projects and the output flags."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import click
from click.shell_completion import CompletionItem

from ..database import Database, open_database
from .app import Settings


def complete_sessions(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Session ids for shell completion (newest first for an empty prefix)."""
    root = ctx.find_root().params.get("db")
    path = (Path(root) if root else Settings(None).path).expanduser()
    if not path.is_file():
        return []

    async def go() -> list[str]:
        async with open_database(path, create=False) as db:
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


_RELATIVE = re.compile(r"^(\d+)\s*([mhdw])$")


_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class When(click.ParamType):  # type: ignore[type-arg]
    """A point in time: ``2025-06-01``, ``2025-06-01T14:30`` (local unless it has an offset),
    or an age like ``30m``, ``12h``, ``7d``, ``2w``."""

    name = "when"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        m = _RELATIVE.match(text)
        if not m:
            try:
                when = datetime.fromisoformat(text)
            except ValueError:
                self.fail(f"{text!r} is not a date (2025-06-01), a time (2025-06-01T14:30) or an age (7d)")
        try:
            if m:
                return datetime.now().astimezone() - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
            return when if when.tzinfo else when.astimezone()
        except (OverflowError, OSError, ValueError) as exc:  # before year 1, or past what the OS knows
            self.fail(f"{text!r} is out of range ({exc})")


def project_option(fn: Any) -> Any:
    fn = click.option("--here", is_flag=True, help="Only the project of the current directory.")(fn)
    return click.option(
        "--project",
        "-p",
        help="Only sessions of this project: a label, or a path (., ~/src/app, /abs/path/).",
    )(fn)


def chosen_project(project: str | None, here: bool) -> str | None:
    if project and here:
        raise click.UsageError("--project and --here cannot be used together")
    return str(Path.cwd().resolve()) if here else project


async def stored_project(db: Database, project: str | None) -> str | None:
    """The project as stored that ``project`` names (see :meth:`Database.stored_project`)."""
    return await db.stored_project(project)


def output_options(fn: Any) -> Any:
    """``--json`` (an array) and ``--nl`` (one JSON object per line) for a listing command."""
    fn = click.option("--nl", is_flag=True, help="Output one JSON object per line.")(fn)
    return click.option("--json", "as_json", is_flag=True, help="Output a JSON array.")(fn)


def one_format(as_json: bool, nl: bool) -> None:
    """Refuse ``--json`` with ``--nl`` (before any work is done)."""
    if as_json and nl:
        raise click.UsageError("--json and --nl cannot be used together")
