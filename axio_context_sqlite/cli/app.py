"""The ``axio-context`` group: where the database is, how errors become one line, and running
one library call per command."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import errno
import io
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import click

from axio_context import __version__
from axio_context.encryption import ENV_KEY, ENV_KEY_FILE, read_key_file
from axio_context.errors import AxioContextError, DatabaseNotFoundError
from axio_context.locations import shown_location
from axio_context.terminal import visible

from ..admin.files import removed_if_failed
from ..errors import EmptyDatabaseError
from ..paths import ENV_VAR, PathSource, db_path
from ..paths import default_db_path as default_db_path  # importable from the CLI, as before
from .backends import OpenDatabase, is_url, opener

T = TypeVar("T")


#: The largest count an option takes: far past any real one, and safely inside SQLite's integers
#: (2**63 - 1) even when the library adds to it (a page asks for one row more than it shows).
COUNT_MAX = 2**62


#: Exports with at least this many messages show a progress bar (when stderr is a terminal).
PROGRESS_MIN = 2_000


class Settings:
    """Where the database is, where that came from, and whether the person named it (``--db``,
    or ``$AXIO_CONTEXT_DB``): a database someone named must exist, the default one may not yet."""

    def __init__(self, db: str | Path | None) -> None:
        named = db if db is not None else os.environ.get(ENV_VAR)
        #: A postgresql:// URL (from --db or the environment), else None for a file.
        self.url: str | None = str(named) if is_url(named) else None
        if self.url is not None:
            # not a file: the commands open ``url`` (see .backends) and show ``shown``
            self.path = Path(shown_location(self.url))
            self.source = PathSource.ARGUMENT if db is not None else PathSource.ENVIRONMENT
        else:
            self.path, self.source = db_path(db)
        self.explicit = self.source is not PathSource.DEFAULT
        #: The key ``--key-file`` gave (None: the environment's, if any); never printed.
        self.key: bytes | None = None

    @property
    def target(self) -> str | Path:
        """What to open: the URL, or the file."""
        return self.url if self.url is not None else self.path

    @property
    def shown(self) -> str:
        """The database as people see it: the file, or the URL without its password."""
        return shown_location(self.target)


def settings_of(ctx: click.Context) -> Settings:
    obj = ctx.find_object(Settings)
    assert obj is not None
    return obj


#: What a relative path, ``.`` or ``--here`` meets when the folder the command runs in was deleted.
CWD_GONE = "the current directory no longer exists (it was deleted); cd to one that does"


def _cwd_gone(exc: OSError) -> bool:
    """Whether ``exc`` (naming no file) is the current directory missing: ``getcwd()`` fails."""
    if exc.filename is not None or exc.errno != errno.ENOENT:
        return False
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """The library's errors (and the file system's) become a one-line message and exit code 1."""
    try:
        yield
    except AxioContextError as exc:
        raise click.ClickException(str(exc)) from None
    except BrokenPipeError:
        raise  # the reader went away: the group ends the command quietly
    except OSError as exc:
        if _cwd_gone(exc):
            raise click.ClickException(CWD_GONE) from None
        raise click.ClickException(
            f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)
        ) from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class OutputError(click.ClickException):
    """The output (stdout, or a file) could not be written: a full disk, an I/O error."""

    def __init__(self, exc: OSError, name: str | None = None) -> None:
        if name is None:
            _silence_stdout()
        super().__init__(f"cannot write {name or 'the output'}: {exc.strerror or exc}")


class Written:
    """A binary output whose failed writes name it (a reader gone away stays a BrokenPipeError)."""

    def __init__(self, out: BinaryIO, name: str | None) -> None:
        self.out, self.name = out, name

    def write(self, data: bytes) -> None:
        try:
            self.out.write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc, self.name) from None

    def flush(self) -> None:
        try:
            self.out.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc, self.name) from None


def _run(fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run one async step; the library's errors become a one-line message and exit code 1."""
    with one_line_errors():
        return asyncio.run(fn())


def with_db(
    ctx: click.Context,
    write: bool,
    action: Callable[[OpenDatabase], Awaitable[T]],
    absent: Callable[[], T] | None = None,
) -> T:
    """Open the database (creating it only for ``write``; else it must exist and hold a
    database), run ``action``, close it. ``absent``: as :func:`read_db` takes it."""
    return _on_db(ctx, action, absent, create=write)


def read_db(
    ctx: click.Context,
    action: Callable[[OpenDatabase], Awaitable[T]],
    absent: Callable[[], T] | None = None,
) -> T:
    """:func:`with_db` for a command that only reads: the database is opened read-only, so
    nothing is written to it (no schema into an empty file) and nothing is created.

    ``absent``: what an empty file, or a missing default database (a fresh machine), gives
    instead of an error; a missing file someone named stays an error.
    """
    return _on_db(ctx, action, absent, readonly=True)


def _on_db(
    ctx: click.Context,
    action: Callable[[OpenDatabase], Awaitable[T]],
    absent: Callable[[], T] | None,
    **options: bool,
) -> T:
    settings = settings_of(ctx)

    async def go() -> T:
        async with contextlib.AsyncExitStack() as stack:
            try:
                db = await stack.enter_async_context(opener(settings.target, settings.key, **options))
            except DatabaseNotFoundError as exc:
                named = settings.explicit and not isinstance(exc, EmptyDatabaseError)
                if absent is None or named:
                    raise
                return absent()
            return await action(db)

    return _run(go)


def no_sessions_yet(ctx: click.Context, err: bool = False) -> None:
    """Say that the database holds nothing yet (a fresh machine is not an error), naming it as
    people see it (a URL without its password)."""
    click.echo(visible(f"no sessions yet (database: {settings_of(ctx).shown})"), err=err)


def _abbreviates(short: str, name: str) -> bool:
    """Whether ``short`` is ``name`` with letters left out (``lst`` of ``list-sessions``)."""
    if not short or short[0] != name[0]:
        return False
    rest = iter(name)
    return all(ch in rest for ch in short)


def close_commands(name: str, names: list[str]) -> list[str]:
    """The commands a mistyped ``name`` may mean, closest first: those it starts (``list``), those
    it abbreviates (``lst``), else those a few edits away (``stats`` for ``stast``)."""
    if not name:
        return []
    ordered = sorted(names)
    found = [c for c in ordered if c.startswith(name)]
    found += [c for c in ordered if c not in found and _abbreviates(name, c)]
    return found or difflib.get_close_matches(name, ordered, n=3, cutoff=0.5)


class _Group(click.Group):
    """The command group: writing the output cannot end a command with a traceback.

    A reader that went away (``... | head``) ends it quietly with exit code 1 (as click does);
    any other failed write (a full disk) is one ``Error:`` line, exit code 1. Every error is
    one line with no control character (:func:`~axio_context.terminal.visible`). A mistyped command
    names the closest ones; shell completion never prints a traceback.
    """

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            name = exc.command_name
            close = close_commands(name, [n for n, c in self.commands.items() if not c.hidden])
            if not close:
                raise
            hint = " or ".join(repr(c) for c in close[:3])
            raise click.exceptions.NoSuchCommand(
                name, f"No such command {name!r}. Did you mean {hint}?", ctx=ctx
            ) from None

    def _main_shell_completion(self, ctx_args: Any, prog_name: str, complete_var: str | None = None) -> None:
        try:
            super()._main_shell_completion(ctx_args, prog_name, complete_var)
        except Exception:  # a half-typed command line can fail to parse: offer nothing, quietly
            sys.exit(1)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            # An error names what it was given, stored text included: one line, no control.
            setattr(exc, "message", visible(exc.message, lines=False))  # noqa: B010 (Final in the stubs)
            raise
        except OSError as exc:
            if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
                _silence_stdout()
                ctx.exit(1)
            if exc.filename is not None:
                raise click.ClickException(
                    visible(f"{exc.strerror or exc}: {exc.filename}", lines=False)
                ) from None
            if _cwd_gone(exc):  # Path.cwd() or a relative path resolved outside one_line_errors()
                raise click.ClickException(CWD_GONE) from None
            raise OutputError(exc) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    help=f"Database file or postgresql:// URL (default: ${ENV_VAR}, else context.db in the user data dir).",
)
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False),
    help=f"Key of an encrypted database: a file of 64 hex characters or 32 bytes (default: ${ENV_KEY},"
    f" else the file ${ENV_KEY_FILE} names).",
)
@click.version_option(__version__, prog_name="axio-context")
@click.pass_context
def cli(ctx: click.Context, db: str | None, key_file: str | None) -> None:
    """See, read, back up and move the agent sessions stored by axio-context."""
    for stream in (sys.stdout, sys.stderr):
        # Text the terminal's encoding cannot show is replaced, not a UnicodeEncodeError
        # (JSON is written as UTF-8 bytes, so it loses nothing).
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    ctx.obj = Settings(db)
    if key_file is not None:
        with one_line_errors():
            ctx.obj.key = read_key_file(key_file)


def writing_db(ctx: click.Context, action: Callable[[OpenDatabase], Awaitable[T]]) -> T:
    """:func:`with_db` for a command that creates the database when needed; if it fails, a
    database (and folders) it created are removed again (:func:`.files.removed_if_failed`)."""
    settings = settings_of(ctx)
    if settings.url is not None:
        return with_db(ctx, True, action)
    with removed_if_failed(settings.path):
        return with_db(ctx, True, action)


def main() -> None:
    """The console script's entry point."""
    cli(prog_name="axio-context")
