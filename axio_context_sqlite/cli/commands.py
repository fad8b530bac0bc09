"""The ``axio-context`` command line: a skin over :class:`~axio_context_sqlite.database.Database`.

Each command opens the database, makes one library call and formats the result: a table or
Markdown for people, ``--json`` (an array) or ``--nl`` (one object per line) for programs. The
library's named errors become one-line messages and exit code 1; usage errors are click's (2).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import importlib.util
import io
import os
import re
import shutil
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar, cast

import click
import msgspec
import platformdirs
from click.shell_completion import CompletionItem

from axio_context import __version__
from axio_context.codec import encode_json, format_json
from axio_context.embeddings import BUNDLED_MINILM
from axio_context.errors import AxioContextError, EmbedderUnavailableError
from axio_context.messages import SessionInfo
from axio_context.transcript import FORMATS, FormatName, message_range, render_blocks, render_header

from ..admin.maintenance import SIDE_SUFFIXES, STDIN, writing
from ..database import HASHING_MODEL, Database, RecompressReport, VacuumReport, open_database
from ..search.engine import MAX_K, MODES, IndexStatus, ReindexReport, SearchHit, SearchResults
from ..store.ops import SessionPage

__all__ = ["cli", "default_db_path", "main"]

T = TypeVar("T")

ENV_VAR = "AXIO_CONTEXT_DB"
#: The largest count an option takes: far past any real one, and safely inside SQLite's integers
#: (2**63 - 1) even when the library adds to it (a page asks for one row more than it shows).
COUNT_MAX = 2**62
#: Exports with at least this many messages show a progress bar (when stderr is a terminal).
PROGRESS_MIN = 2_000


def default_db_path() -> Path:
    """The database used without ``--db`` or ``$AXIO_CONTEXT_DB``: in the user data directory."""
    return platformdirs.user_data_path("axio-context") / "context.db"


class Settings:
    """Where the database is, and whether the person named it (``--db``, or ``$AXIO_CONTEXT_DB``):
    a database someone named must exist, while the default one may not yet."""

    def __init__(self, db: Path | None) -> None:
        env = os.environ.get(ENV_VAR)
        self.explicit = db is not None or bool(env)
        self.path = (db or (Path(env) if env else default_db_path())).expanduser()


def _settings(ctx: click.Context) -> Settings:
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
def _errors() -> Iterator[None]:
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


class _Written:
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
    with _errors():
        return asyncio.run(fn())


def _with_db(ctx: click.Context, write: bool, action: Callable[[Database], Awaitable[T]]) -> T:
    """Open the database (creating it only for ``write``), run ``action``, close it."""
    path = _settings(ctx).path

    async def go() -> T:
        async with open_database(path, create=write) as db:
            return await action(db)

    return _run(go)


# --- arguments -----------------------------------------------------------------------------------


def _complete_sessions(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
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
        shell_complete=_complete_sessions,
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


def _project_option(fn: Any) -> Any:
    fn = click.option("--here", is_flag=True, help="Only the project of the current directory.")(fn)
    return click.option(
        "--project",
        "-p",
        help="Only sessions of this project: a label, or a path (., ~/src/app, /abs/path/).",
    )(fn)


def _project(project: str | None, here: bool) -> str | None:
    if project and here:
        raise click.UsageError("--project and --here cannot be used together")
    return str(Path.cwd().resolve()) if here else project


def _project_forms(project: str) -> list[str]:
    """What a ``--project`` value may name: itself, and for a path (starting with ``.``, ``/`` or
    ``~``) its absolute form (``~`` expanded, ``.`` and a trailing ``/`` gone), then with symlinks
    resolved (as ``--here`` and the store's default project are)."""
    forms = [project]
    if project.startswith((".", "/", "~")):
        expanded = os.path.expanduser(project)
        for form in (os.path.abspath(expanded), os.path.realpath(expanded)):
            if form not in forms:
                forms.append(form)
    return forms


async def _stored_project(db: Database, project: str | None) -> str | None:
    """The project as stored that ``project`` names: the first of its forms any session is filed
    under (the value as typed first, so a label or an exact path always matches itself)."""
    if project is None:
        return None
    forms = _project_forms(project)
    if len(forms) > 1 and not (await db.list_sessions(project, limit=1)).sessions:
        for form in forms[1:]:
            if (await db.list_sessions(form, limit=1)).sessions:
                return form
    return project


# --- output --------------------------------------------------------------------------------------


def output_options(fn: Any) -> Any:
    """``--json`` (an array) and ``--nl`` (one JSON object per line) for a listing command."""
    fn = click.option("--nl", is_flag=True, help="Output one JSON object per line.")(fn)
    return click.option("--json", "as_json", is_flag=True, help="Output a JSON array.")(fn)


class Column:
    """One column of a table for people; ``visible``: its cells are already made safe for a
    terminal (and may hold the styling we add), so they are not escaped again."""

    def __init__(
        self, key: str, title: str, width: int | None = None, right: bool = False, visible: bool = False
    ) -> None:
        self.key, self.title, self.width, self.right, self.visible = key, title, width, right, visible


# C0 controls but tab and newline, DEL, C1 controls: ESC starts the sequences that move the
# cursor, recolour or retitle a terminal, and CR overwrites what a line showed.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` safe to print on a terminal: control characters shown as escapes (``\\r``,
    ``\\x1b``), so stored text cannot send the terminal commands; newlines and tabs are kept."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _cell(value: Any, width: int | None, safe: bool = False) -> str:
    text = "" if value is None else str(value).replace("\n", " ").replace("\t", " ")
    text = text if safe else visible(text)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def one_format(as_json: bool, nl: bool) -> None:
    """Refuse ``--json`` with ``--nl`` (before any work is done)."""
    if as_json and nl:
        raise click.UsageError("--json and --nl cannot be used together")


def echo_json(value: Any, indent: int = 2) -> None:
    """Print ``value`` as JSON: indented (``--json``), or on one line with ``indent=0``."""
    click.echo(format_json(value, indent=indent))  # bytes: always UTF-8


def emit(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    as_json: bool,
    nl: bool,
    table_rows: Callable[[], Sequence[dict[str, Any]]] | None = None,
) -> None:
    """Print ``rows`` as JSON (``--json``/``--nl``) or as an aligned table of ``columns``
    (of ``table_rows()`` when given: rows formatted for people, built only when needed)."""
    one_format(as_json, nl)
    if as_json:
        echo_json(list(rows))
        return
    if nl:
        for row in rows:
            click.echo(encode_json(row))
        return
    shown = table_rows() if table_rows is not None else rows
    cells = [[_cell(r.get(c.key), c.width, c.visible) for c in columns] for r in shown]
    widths = [max([len(c.title)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]

    def line(values: Iterable[str]) -> str:
        parts = [
            v.rjust(w) if c.right else v.ljust(w) for v, w, c in zip(values, widths, columns, strict=True)
        ]
        return "  ".join(parts).rstrip()

    click.echo("\n".join([line(c.title for c in columns), *(line(values) for values in cells)]))


def _local(iso: str) -> str:
    if not iso:
        return ""
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")


@functools.cache
def _home_dir() -> str:
    return str(Path.home())


def _home(path: str | None) -> str | None:
    if path is None:
        return None
    home = _home_dir()
    return "~" + path[len(home) :] if path == home or path.startswith(home + os.sep) else path


def _info_dict(info: SessionInfo) -> dict[str, Any]:
    return {f: getattr(info, f) for f in SessionInfo.__struct_fields__}


#: A long random id (a uuid, as ``fork`` makes) is shown cut to a prefix at least this long.
SHORT_ID = 12
_RANDOM_ID = re.compile(r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


#: Beyond this many random ids to shorten, every session id is read at once (one query) and the
#: prefixes are worked out here; for fewer, a prefix query or two per id reads less.
_FETCH_ALL_IDS = 32


def _shared(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` have in common."""
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _unique_prefix(i: str, others: Iterable[str]) -> str:
    """``i`` cut to the shortest prefix of at least :data:`SHORT_ID` characters none of
    ``others`` starts with (``i`` whole when it is a prefix of one of them)."""
    n = SHORT_ID
    for o in others:
        if o != i:
            n = max(n, _shared(i, o) + 1)
    return i[: min(n, len(i))]


async def _shown_ids(db: Database, ids: Iterable[str | None]) -> dict[str, str]:
    """How each id appears in a table: in full, except a long random id, cut to the shortest
    prefix (at least :data:`SHORT_ID` characters) no other session id starts with, so typing
    back what the table shows always finds that session."""
    wanted = list(dict.fromkeys(i for i in ids if i is not None))
    shown = {i: i for i in wanted}
    random = sorted(i for i in wanted if _RANDOM_ID.fullmatch(i))
    if len(random) > _FETCH_ALL_IDS:
        # In sorted order, the id sharing the longest prefix with another is next to it.
        every = sorted({*await db.complete("", limit=COUNT_MAX), *random})
        at = {i: k for k, i in enumerate(every)}
        for i in random:
            k = at[i]
            shown[i] = _unique_prefix(i, every[max(k - 1, 0) : k + 2])
        return shown
    for i in random:
        n = SHORT_ID
        while n < len(i):
            others = [o for o in await db.complete(i[:n], limit=2) if o != i]
            if not others:
                break
            n = max(n + 1, _shared(i, others[0]) + 1)
        shown[i] = i[:n]
    return shown


async def _shown_for_infos(db: Database, infos: Sequence[SessionInfo]) -> dict[str, str]:
    return await _shown_ids(db, [x for i in infos for x in (i.session_id, i.parent_id)])


def _info_row(info: SessionInfo, shown: dict[str, str]) -> dict[str, Any]:
    fork = None
    if info.parent_id is not None:
        fork = shown[info.parent_id] + ("" if info.fork_position is None else f"@{info.fork_position}")
    return {
        "id": shown[info.session_id],
        "project": _home(info.project),
        "created": _local(info.created_at),
        "updated": _local(info.updated_at),
        "messages": f"{info.message_count:,}",
        "in": f"{info.input_tokens:,}",
        "out": f"{info.output_tokens:,}",
        "fork": fork,
        "preview": info.title or info.preview,
    }


SESSION_COLUMNS = [
    Column("id", "ID"),
    Column("project", "PROJECT", 28),
    Column("created", "CREATED"),
    Column("updated", "UPDATED"),
    Column("messages", "MSGS", right=True),
    Column("in", "IN", right=True),
    Column("out", "OUT", right=True),
    Column("fork", "FORKED FROM"),
    Column("preview", "PREVIEW", 48),
]


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


# --- the group -----------------------------------------------------------------------------------


class _Group(click.Group):
    """The command group: writing the output cannot end a command with a traceback.

    A reader that went away (``... | head``) ends it quietly with exit code 1 (as click does);
    any other failed write (a full disk) is one ``Error:`` line, exit code 1.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
                _silence_stdout()
                ctx.exit(1)
            if exc.filename is not None:
                raise click.ClickException(f"{exc.strerror or exc}: {exc.filename}") from None
            if _cwd_gone(exc):  # Path.cwd() or a relative path resolved outside _errors()
                raise click.ClickException(CWD_GONE) from None
            raise OutputError(exc) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"Database file (default: ${ENV_VAR}, else context.db in the user data directory).",
)
@click.version_option(__version__, prog_name="axio-context")
@click.pass_context
def cli(ctx: click.Context, db: Path | None) -> None:
    """See, read, back up and move the agent sessions stored by axio-context."""
    for stream in (sys.stdout, sys.stderr):
        # Text the terminal's encoding cannot show is replaced, not a UnicodeEncodeError
        # (JSON is written as UTF-8 bytes, so it loses nothing).
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    ctx.obj = Settings(db)


@cli.command("list-sessions")
@_project_option
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(0, COUNT_MAX),
    default=50,
    show_default=True,
    help="At most N (0: all).",
)
@click.option("--since", type=When(), help="Only sessions created since (a date, or an age like 7d).")
@output_options
@click.pass_context
def list_sessions(
    ctx: click.Context,
    project: str | None,
    here: bool,
    limit: int,
    since: datetime | None,
    as_json: bool,
    nl: bool,
) -> None:
    """List sessions, newest first."""
    settings = _settings(ctx)
    scope = _project(project, here)
    one_format(as_json, nl)
    if not settings.explicit and not settings.path.exists():
        # A fresh machine: nothing stored yet is not an error (an explicit --db that is missing is).
        if as_json:
            click.echo("[]")
        elif not nl:
            click.echo(f"no sessions yet (database: {settings.path})")
        return

    async def go(db: Database) -> tuple[SessionPage, dict[str, str], bool]:
        page = await db.list_sessions(await _stored_project(db, scope), limit=limit or None, since=since)
        filtered = (scope is not None or since is not None) and not page.sessions
        others = filtered and bool((await db.list_sessions(limit=1)).sessions)
        return page, {} if as_json or nl else await _shown_for_infos(db, page.sessions), others

    page, shown, others = _with_db(ctx, False, go)
    infos = page.sessions
    if not infos and not (as_json or nl):
        what = "no session matches the filters" if others else "no sessions yet"
        click.echo(f"{what} (database: {settings.path})")
        return
    rows = [_info_dict(i) for i in infos]
    emit(rows, SESSION_COLUMNS, as_json, nl, lambda: [_info_row(i, shown) for i in infos])
    if page.next_cursor is not None:  # on stderr, so --json and --nl output stays as it is
        click.echo(f"(the newest {limit}; -n 0 lists all)", err=True)


async def _pick(db: Database, session: str | None) -> str:
    return await db.resolve(session) if session else await db.latest()


@cli.command()
@session_argument(required=False)
@click.option("--full", is_flag=True, help="Every message, including those a compaction summarised.")
@click.option(
    "--fold",
    type=click.IntRange(min=20),
    default=600,
    show_default=True,
    help="Cut tool calls/results to N characters.",
)
@click.option("--json", "as_json", is_flag=True, help="Output JSON.")
@click.pass_context
def show(ctx: click.Context, session: str | None, full: bool, fold: int, as_json: bool) -> None:
    """Show a conversation (default: the newest session)."""

    async def go(db: Database) -> Any:
        return await db.show(await _pick(db, session), full=full)

    view = _with_db(ctx, False, go)
    if as_json:
        messages = [
            {"position": view.start + i, **msgspec.structs.asdict(m)} for i, m in enumerate(view.messages)
        ]
        doc = {"session": view.header, "summary": view.summary, "start": view.start, "messages": messages}
        echo_json(doc)
        return
    out = [render_header(view.header)]
    if view.summary is not None:
        out.append(
            f"*Compacted: {message_range(view.start)} replaced by this summary in the model's view "
            "(--full shows everything).*\n"
        )
        for m in view.summary:
            out.append(f"## summary · {m.role}\n\n{render_blocks(m.content, fold)}")
    for i, r in enumerate(view.messages):
        when = _local(r.created_at)
        out.append(f"## {view.start + i} · {r.role} · {when}\n\n{render_blocks(r.content, fold)}")
    click.echo(visible("\n".join(out)), nl=False)


class _Progress:
    """A progress bar on stderr, drawn only for long exports and only on a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.bar: Any = None
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN:
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label="exporting", file=sys.stderr)
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.render_finish()


@cli.command()
@session_argument(required=False, nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every session in the database.")
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="json", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to FILE (- is stdout), replacing it only once the export is complete.",
)
@click.pass_context
def export(ctx: click.Context, sessions: tuple[str, ...], all_: bool, fmt: str, output: str | None) -> None:
    """Export sessions (default: the newest) as json, jsonl or markdown."""
    if all_ and sessions:
        raise click.UsageError("give SESSION arguments or --all, not both")
    format_ = cast(FormatName, fmt)
    progress = _Progress()

    async def go(db: Database, out: _Written) -> Any:
        ids: list[str] | None
        if all_:
            ids = None
        elif sessions:
            ids = [await db.resolve(s) for s in sessions]
        else:
            ids = [await db.latest()]
        result = await db.export(out.write, format=format_, session_ids=ids, progress=progress)
        out.flush()
        return result

    try:
        if output is None or output == "-":
            _with_db(ctx, False, lambda db: go(db, _Written(sys.stdout.buffer, None)))
            return
        with _errors(), writing(Path(output), _settings(ctx).path) as f:
            summary = _with_db(ctx, False, lambda db: go(db, _Written(f, output)))
    finally:
        progress.close()
    click.echo(f"exported {summary.sessions} session(s), {summary.messages} message(s) to {output}", err=True)


def _writing_db(ctx: click.Context, action: Callable[[Database], Awaitable[T]]) -> T:
    """:func:`_with_db` for a command that creates the database when needed; if it fails, a
    database (and folders) it created are removed again, so a mistyped ``--db`` leaves nothing."""
    # Resolved once: a --db symlink whose target is missing names the file to create (and to
    # remove again), never the link itself.
    path = Path(os.path.realpath(_settings(ctx).path))
    absent = [p for p in (path, *path.parents) if not p.exists()]
    try:
        return _with_db(ctx, True, action)
    except BaseException:
        if absent and absent[0] == path:
            for suffix in ("", *SIDE_SUFFIXES):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            for folder in absent[1:]:  # the deepest first; one holding anything else stays
                with contextlib.suppress(OSError):
                    folder.rmdir()
        raise


@cli.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("-f", "--format", "fmt", type=click.Choice(["json", "jsonl"]), help="Default: detected.")
@click.option("--replace", is_flag=True, help="Overwrite sessions whose id already exists.")
@click.option("--new-ids", is_flag=True, help="Give every imported session a new id (import copies).")
@click.option("--json", "as_json", is_flag=True, help="Output what was imported as JSON.")
@click.pass_context
def import_(
    ctx: click.Context, file: str, fmt: str | None, replace: bool, new_ids: bool, as_json: bool
) -> None:
    """Import a json/jsonl export (- reads stdin); validates all of it before writing anything."""
    if replace and new_ids:
        raise click.UsageError("--replace and --new-ids cannot be used together")
    # "-" is stdin; a file named "-" is ./- (which Path would shorten to "-" again)
    source = STDIN if file == "-" else Path(file) if Path(file) != STDIN else Path.cwd() / file
    report = _writing_db(
        ctx,
        lambda db: db.import_file(
            source, format=cast(Literal["json", "jsonl"] | None, fmt), replace=replace, new_ids=new_ids
        ),
    )
    if as_json:
        echo_json(report)
        return
    messages = sum(s.messages for s in report.sessions)
    replaced = sum(s.replaced for s in report.sessions)
    extra = f", {replaced} replaced" if replaced else ""
    shown = "standard input" if source == STDIN else file
    click.echo(f"imported {len(report.sessions)} session(s), {messages} message(s){extra} from {shown}")


@cli.command("import-axio")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Overwrite sessions whose transcript here differs.")
@click.option("--json", "as_json", is_flag=True, help="Output the outcome per session as JSON.")
@click.pass_context
def import_axio(ctx: click.Context, path: Path, replace: bool, as_json: bool) -> None:
    """Migrate a database written by axio-context-sqlite (safe to run again)."""
    report = _writing_db(ctx, lambda db: db.import_axio(path, replace=replace))
    if as_json:
        echo_json(report)
        return
    click.echo(
        f"{len(report.added)} added, {len(report.updated)} updated, {len(report.unchanged)} unchanged"
        + (f", {len(report.replaced)} replaced" if report.replaced else "")
        + f"; {report.messages} message(s) written"
    )
    if report.conflicts:
        shown = ", ".join(report.conflicts[:5]) + (", ..." if len(report.conflicts) > 5 else "")
        click.echo(
            f"{len(report.conflicts)} session(s) differ here and were left alone ({shown}); "
            "--replace overwrites them",
            err=True,
        )


@cli.command()
@session_argument()
@click.option("--id", "new_id", help="Id for the new session (default: a new uuid).")
@click.pass_context
def fork(ctx: click.Context, session: str, new_id: str | None) -> None:
    """Fork a session; prints the new session's id."""
    if new_id is not None and not new_id:
        raise click.ClickException("a session id must not be empty")

    async def go(db: Database) -> str:
        return await db.fork(await db.resolve(session), new_id)

    click.echo(visible(_with_db(ctx, False, go)))


@cli.command()
@session_argument(nargs=-1)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def rm(ctx: click.Context, sessions: tuple[str, ...], yes: bool) -> None:
    """Delete sessions (their forks keep their messages)."""
    ids = _with_db(ctx, False, lambda db: _resolve_all(db, sessions))
    if not yes:
        click.confirm(f"Delete {len(ids)} session(s): {visible(', '.join(ids))}?", abort=True, err=True)
    deleted = _with_db(ctx, False, lambda db: db.delete(ids))
    click.echo(f"deleted {len(deleted)} session(s)")


async def _resolve_all(db: Database, sessions: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([await db.resolve(s) for s in sessions]))


@cli.command()
@session_argument()
@click.argument("new_id")
@click.pass_context
def rename(ctx: click.Context, session: str, new_id: str) -> None:
    """Change a session's id."""

    async def go(db: Database) -> str:
        old = await db.resolve(session)
        await db.rename(old, new_id)
        return old

    old = _with_db(ctx, False, go)
    click.echo(visible(f"renamed {old} to {new_id}"))


@cli.command()
@session_argument()
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the title.")
@click.pass_context
def title(ctx: click.Context, session: str, text: str | None, clear: bool) -> None:
    """Show, set or clear a session's title."""
    if clear and text is not None:
        raise click.UsageError("give TEXT or --clear, not both")

    async def go(db: Database) -> str | None:
        sid = await db.resolve(session)
        if text is None and not clear:
            return (await db.info(sid)).title
        await db.set_title(sid, None if clear else text)
        return None

    shown = _with_db(ctx, False, go)
    if text is None and not clear and shown is not None:
        click.echo(visible(shown))


@cli.command()
@click.option("--nl", is_flag=True, help="Output a JSON object on one line.")
@click.option("--json", "as_json", is_flag=True, help="Output a JSON object.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool, nl: bool) -> None:
    """Sessions, messages, tokens and size on disk, in total and by project."""
    s = _with_db(ctx, False, lambda db: db.stats())
    if as_json or nl:
        one_format(as_json, nl)
        echo_json(s, indent=2 if as_json else 0)
        return
    path = _settings(ctx).path
    click.echo(f"database   {path}")
    on_disk = _size(s.file_bytes + s.wal_bytes)
    click.echo(f"size       {on_disk} ({_size(s.wal_bytes)} WAL, {s.free_pages:,} free pages)")
    click.echo(f"sessions   {s.sessions:,}")
    click.echo(f"messages   {s.messages:,} ({s.stored_messages:,} stored; forks share the rest)")
    click.echo(f"tokens     {s.input_tokens:,} in / {s.output_tokens:,} out")
    dicts = f"{s.dictionaries} compression {'dictionary' if s.dictionaries == 1 else 'dictionaries'}"
    sealed = f"; {s.sealed_messages:,} messages sealed in {s.chunks:,} chunk(s)" if s.chunks else ""
    click.echo(f"payloads   {_size(s.payload_bytes)} ({dicts}{sealed})")
    click.echo(f"media      {s.blobs:,} blob(s), {_size(s.blob_bytes)}")
    click.echo(f"compaction {s.checkpoints:,} checkpoint(s)")
    if s.by_project:
        click.echo("")
        rows = [
            {
                "project": _home(p.project) or "(none)",
                "sessions": f"{p.sessions:,}",
                "messages": f"{p.messages:,}",
                "in": f"{p.input_tokens:,}",
                "out": f"{p.output_tokens:,}",
            }
            for p in s.by_project
        ]
        emit(
            rows,
            [
                Column("project", "PROJECT", 48),
                Column("sessions", "SESSIONS", right=True),
                Column("messages", "MESSAGES", right=True),
                Column("in", "IN", right=True),
                Column("out", "OUT", right=True),
            ],
            False,
            False,
        )


@cli.command()
@click.option("--before", type=When(), help="Sessions last updated before this (a date, or an age like 90d).")
@click.option("--keep", type=click.IntRange(0, COUNT_MAX), help="Keep the N most recently updated sessions.")
@_project_option
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@output_options
@click.pass_context
def prune(
    ctx: click.Context,
    before: datetime | None,
    keep: int | None,
    project: str | None,
    here: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
    nl: bool,
) -> None:
    """Delete whole old sessions: --before DATE and/or --keep N, optionally in one project."""
    if before is None and keep is None:
        raise click.UsageError("give --before DATE and/or --keep N")
    scope = _project(project, here)

    async def candidates(db: Database) -> tuple[str | None, list[SessionInfo], dict[str, str]]:
        project = await _stored_project(db, scope)
        infos = await db.prune(before=before, keep=keep, project=project, dry_run=True)
        return project, infos, {} if as_json or nl else await _shown_for_infos(db, infos)

    stored, infos, shown = _with_db(ctx, False, candidates)
    if dry_run or not infos:
        if infos or as_json or nl:
            emit(
                [_info_dict(i) for i in infos],
                SESSION_COLUMNS,
                as_json,
                nl,
                lambda: [_info_row(i, shown) for i in infos],
            )
        if not (as_json or nl):
            click.echo(
                f"{len(infos)} session(s) would be deleted" if dry_run else "nothing to prune", err=True
            )
        return
    if not yes:
        click.confirm(f"Delete {len(infos)} session(s)?", abort=True, err=True)
    ids = [i.session_id for i in infos]

    # Only what was listed, and of it only what still qualifies, checked again in the transaction
    # that deletes: a session an agent appended to while the prompt waited is kept.
    deleted = {
        i.session_id
        for i in _with_db(ctx, False, lambda db: db.prune(before=before, keep=keep, project=stored, only=ids))
    }
    if as_json or nl:
        emit([_info_dict(i) for i in infos if i.session_id in deleted], SESSION_COLUMNS, as_json, nl)
    else:
        click.echo(f"deleted {len(deleted)} session(s)")
    if len(deleted) < len(infos):
        click.echo(
            f"kept {len(infos) - len(deleted)} listed session(s) that changed meanwhile "
            "(updated since, or deleted by someone else)",
            err=True,
        )


@cli.command()
@click.option(
    "--recompress",
    is_flag=True,
    help="First retrain the compression dictionary on the whole database, rewrite every payload "
    "with it, then rebuild the file (a full vacuum).",
)
@click.pass_context
def vacuum(ctx: click.Context, recompress: bool) -> None:
    """Reclaim the space deleted sessions left, and truncate the WAL."""

    async def both(db: Database) -> tuple[RecompressReport | None, VacuumReport]:
        # rows shrink in place: only a full rebuild packs the pages they leave part-empty
        return (await db.recompress() if recompress else None), await db.vacuum(full=recompress)

    rc, r = _with_db(ctx, False, both)
    if rc is not None:
        if rc.dictionary is None:
            click.echo("recompress: too few compressible payloads to train a dictionary yet")
        else:
            click.echo(
                f"recompressed {rc.rows:,} payload(s) with dictionary {rc.dictionary}:"
                f" {_size(rc.bytes_before)} -> {_size(rc.bytes_after)};"
                f" {rc.dictionaries_removed} unused dictionary(ies) deleted"
            )
    if r.chunks_sealed:
        click.echo(f"sealed {r.chunks_sealed:,} block(s) of older messages into chunks")
    note = " (WAL still in use by another connection)" if r.wal_busy else ""
    click.echo(f"{r.method} vacuum: {_size(r.bytes_before)} -> {_size(r.bytes_after)}{note}")


@cli.command()
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite DEST if it exists.")
@click.pass_context
def backup(ctx: click.Context, dest: Path, force: bool) -> None:
    """Write a consistent copy of the database to DEST, even while it is in use."""
    _with_db(ctx, False, lambda db: db.backup(dest, overwrite=force))
    click.echo(f"backed up {_settings(ctx).path} to {dest} ({_size(dest.stat().st_size)})")


# --- search --------------------------------------------------------------------------------------


def _color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _snippet_cell(hit: SearchHit, width: int, color: bool) -> str:
    """The snippet cut to ``width`` characters, matches in bold (on a terminal) or ``**``."""
    text, spans = hit.snippet, hit.highlights
    if len(text) > width:
        text = text[: width - 1] + "…"
        spans = [(a, min(b, width - 1)) for a, b in spans if a < width - 1]
    out: list[str] = []
    last = 0
    for a, b in spans:
        word = visible(text[a:b])
        out.append(visible(text[last:a]))
        out.append(click.style(word, bold=True, fg="yellow") if color else f"**{word}**")
        last = b
    out.append(visible(text[last:]))
    return "".join(out).replace("\n", " ").replace("\t", " ")


def _hit_dict(hit: SearchHit) -> dict[str, Any]:
    return {f: getattr(hit, f) for f in SearchHit.__struct_fields__}


SEARCH_COLUMNS = [
    Column("session", "SESSION"),
    Column("position", "POS", right=True),
    Column("role", "ROLE"),
    Column("when", "WHEN"),
    Column("snippet", "SNIPPET", visible=True),
]


def _hit_rows(hits: Sequence[SearchHit], shown: dict[str, str]) -> list[dict[str, Any]]:
    color = _color()
    used = max([len(v) for v in shown.values()] or [7]) + 6 + 10 + 16 + 4 * 2
    width = max(40, shutil.get_terminal_size((120, 24)).columns - used) if sys.stdout.isatty() else 100
    return [
        {
            "session": shown[h.session_id],
            "position": str(h.position),
            "role": h.role,
            "when": _local(h.created_at),
            "snippet": _snippet_cell(h, width, color),
        }
        for h in hits
    ]


class QueryCommand(click.Command):
    """A command whose QUERY words may start with ``-`` (``search parser -zebra``): such a word is
    an option when it is one of the command's options as written (``-k 5``, ``--mode=keyword``)
    or a short option that takes a value with the value attached (``-k5``, ``-pmyproj``, as in
    click and every Unix tool); any other is a query word. After ``--`` every word is."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value: dict[str, bool] = {}
        for param in self.get_params(ctx):
            if isinstance(param, click.Option):
                for name in (*param.opts, *param.secondary_opts):
                    takes_value[name] = not param.is_flag and not param.count
        options: list[str] = []
        words: list[str] = []
        rest = iter(args)
        for arg in rest:
            if arg == "--":
                words.extend(rest)
                break
            name = arg.split("=", 1)[0] if arg.startswith("--") else arg
            if name in takes_value:
                options.append(arg)
                if takes_value[name] and "=" not in arg:
                    value = next(rest, None)
                    if value is None:  # click's own error (the "--" added below is no value)
                        raise click.BadOptionUsage(name, f"Option {name!r} requires an argument.")
                    options.append(value)  # taken as it is, even when it starts with -
                continue
            # An unknown --option is left to click, which names it; -k5 is -k 5, -pX is -p X.
            option = arg.startswith("--") or (len(arg) > 2 and takes_value.get(arg[:2], False))
            (options if option else words).append(arg)
        return super().parse_args(ctx, [*options, "--", *words] if words else options)


@cli.command("search", cls=QueryCommand)
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="hybrid",
    show_default=True,
    help="keyword: the words (FTS5); semantic: nearest embeddings; hybrid: both, fused.",
)
@click.option(
    "-k", "--limit", type=click.IntRange(1, MAX_K), default=10, show_default=True, help="At most N hits."
)
@_project_option
@click.option(
    "-s",
    "--session",
    shell_complete=_complete_sessions,
    help="Only this session's transcript (id or unique prefix), inherited messages included.",
)
@click.option(
    "--role", type=click.Choice(["user", "assistant", "system"]), help="Only messages of this role."
)
@click.option("--since", type=When(), help="Only messages since (a date, or an age like 7d).")
@click.option("--raw", is_flag=True, help='QUERY is FTS5 syntax: AND, OR, NOT, NEAR, "phrases", prefix*.')
@click.option(
    "--model",
    help="Embedder for semantic/hybrid: hashing, minilm, or a model directory "
    "(default: the one the database was embedded with).",
)
@output_options
@click.pass_context
def search_(
    ctx: click.Context,
    query: tuple[str, ...],
    mode: str,
    limit: int,
    project: str | None,
    here: bool,
    session: str | None,
    role: str | None,
    since: datetime | None,
    raw: bool,
    model: str | None,
    as_json: bool,
    nl: bool,
) -> None:
    """Search every session's messages for QUERY (words; quotes keep a phrase).

    A word starting with - is part of QUERY unless it is one of the options below, written
    apart or, for -k, -p and -s, with the value attached (-k5, -pmyproj, -sab12): so
    `search parser -zebra` searches both words, but `search parser -pizza` is
    `search parser -p izza`. After -- every word is QUERY: `search -- parser -pizza`. Without
    --raw, -zebra is the word zebra, not an exclusion: --raw 'parser NOT zebra' leaves a word out.
    """
    one_format(as_json, nl)
    scope = _project(project, here)
    text = " ".join(query)
    _check_model(model)

    async def go(db: Database) -> tuple[SearchResults, str | None, dict[str, str]]:
        session_id = await db.resolve(session) if session is not None else None
        how, embedder, note = mode, None, None
        if mode != "keyword":
            if mode == "hybrid" and await db.embedding_model() is None:
                how = "keyword"
                note = (
                    "no message is embedded yet, so this was a keyword search; "
                    "`axio-context reindex` embeds them"
                )
            else:
                try:
                    embedder = await db.embedder(model)
                except EmbedderUnavailableError as exc:
                    if mode != "hybrid" or model is not None:
                        raise
                    how, note = "keyword", f"{exc}; this was a keyword search"
        hits = await db.search(
            text,
            k=limit,
            mode=cast(Any, how),
            project=await _stored_project(db, scope),
            session_id=session_id,
            role=role,
            since=since,
            raw=raw,
            embedder=embedder,
        )
        shown = {} if as_json or nl else await _shown_ids(db, [h.session_id for h in hits])
        return hits, note, shown

    hits, note, shown = _with_db(ctx, False, go)
    if note is not None:
        click.echo(f"note: {note}", err=True)
    dashed = [w for w in text.split() if len(w) > 1 and w.startswith("-")]
    if dashed and not raw:
        click.echo(
            f"note: {dashed[0]} searches for the word itself; --raw 'parser NOT pizza' leaves a word out",
            err=True,
        )
    if hits.unindexed:
        click.echo(
            f"note: {hits.unindexed:,} recent message(s) could not be searched by keyword: {hits.why}"
            " (taking them into the keyword index needs a write)",
            err=True,
        )
    if not hits and not (as_json or nl):
        click.echo("no matches", err=True)
        return
    emit([_hit_dict(h) for h in hits], SEARCH_COLUMNS, as_json, nl, lambda: _hit_rows(hits, shown))


# A negative POSITION ("-1") is an argument, not an unknown option.
@cli.command(context_settings={"ignore_unknown_options": True})
@session_argument()
@click.argument("position", type=int)
@click.option(
    "-k", "--limit", type=click.IntRange(1, MAX_K), default=10, show_default=True, help="At most N hits."
)
@output_options
@click.pass_context
def similar(ctx: click.Context, session: str, position: int, limit: int, as_json: bool, nl: bool) -> None:
    """Messages across every session nearest in meaning to message POSITION of SESSION.

    POSITION counts from 0 in the session's full transcript; a negative one counts from its end
    (-1: the last message). The message's stored embedding is the query, so no model runs.
    """
    one_format(as_json, nl)

    async def go(db: Database) -> tuple[list[SearchHit], dict[str, str]]:
        hits = await db.similar(await db.resolve(session), position, limit)
        return hits, {} if as_json or nl else await _shown_ids(db, [h.session_id for h in hits])

    hits, shown = _with_db(ctx, False, go)
    if not hits and not (as_json or nl):
        click.echo("no other embedded message", err=True)
        return
    emit([_hit_dict(h) for h in hits], SEARCH_COLUMNS, as_json, nl, lambda: _hit_rows(hits, shown))


class _StageProgress:
    """Progress bars on stderr for a reindex, one per stage, only on a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.bar: Any = None
        self.stage = ""
        self.done = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN:
            return
        if stage != self.stage:
            self.close()
            self.stage, self.done = stage, 0
            self.bar = click.progressbar(length=total, label=stage, file=sys.stderr)
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.render_finish()
            self.bar = None


def _check_model(model: str | None) -> None:
    """Refuse a ``--model`` that names nothing this installation can load (a usage error naming
    it and the known ones), instead of the load failing for an unrelated reason."""
    if model is None or model in ("hashing", HASHING_MODEL, "minilm", BUNDLED_MINILM):
        return
    if Path(model).expanduser().is_dir() or importlib.util.find_spec("sentence_transformers"):
        return  # a model directory, or a name sentence-transformers may have in its cache
    raise click.BadParameter(
        f"unknown model {model!r}: use hashing, minilm, or a sentence-transformers model directory",
        param_hint="'--model'",
    )


@cli.command()
@click.option(
    "--model",
    help="hashing, minilm, or a model directory (default: the database's model, else hashing).",
)
@click.option(
    "--dimension",
    type=click.IntRange(8, 8192),
    help="Width of the hashing embedder (default: the database's, else 384).",
)
@click.option("--rebuild", is_flag=True, help="Drop every embedding first and re-embed with --model.")
@click.option("--batch-size", type=click.IntRange(1, COUNT_MAX), default=256, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Output what was done as JSON.")
@click.pass_context
def reindex(
    ctx: click.Context,
    model: str | None,
    dimension: int | None,
    rebuild: bool,
    batch_size: int,
    as_json: bool,
) -> None:
    """Embed the messages stored without an embedding (resumable), and repair stale codes."""
    progress = _StageProgress()

    _check_model(model)

    async def go(db: Database) -> ReindexReport:
        if dimension is not None:
            recorded = await db.embedding_model()
            name = model or (recorded[0] if recorded else "hashing")
            if name not in ("hashing", HASHING_MODEL):
                raise click.BadParameter(
                    f"only the hashing embedder has a width to choose; {name!r} has its own",
                    param_hint="'--dimension'",
                )
        embedder = await db.embedder(model, dimension=dimension)
        return await db.reindex(embedder, batch_size=batch_size, progress=progress, rebuild=rebuild)

    try:
        r = _with_db(ctx, False, go)
    finally:
        progress.close()
    if as_json:
        echo_json(r)
        return
    what = "re-embedded" if r.rebuilt else "embedded"
    click.echo(f"{what} {r.embedded:,} message(s) with {r.model} ({r.dimension} dimensions)")
    if r.without_text:
        click.echo(f"{r.without_text:,} message(s) have no text to embed")
    if r.codes_added or r.codes_removed:
        click.echo(f"binary codes: {r.codes_added:,} added, {r.codes_removed:,} removed")
    if r.codes_stale:
        click.echo(
            "sqlite-vec does not run here, so semantic search uses the exact scan until reindex "
            "runs where it loads",
            err=True,
        )


def _status_lines(s: IndexStatus) -> list[str]:
    model = (
        "(none yet: `axio-context reindex`)" if s.model is None else f"{s.model} ({s.dimension} dimensions)"
    )
    missing = s.messages - s.embedded
    note = f" ({missing:,} without: no text, or stored without an embedder)" if missing else ""
    semantic = {
        "vec0": "vec0 binary codes, re-scored exactly",
        "exact": "exact scan of every embedding (slower)",
        "none": "unavailable until messages are embedded",
    }[s.semantic]
    return [
        f"model        {model}",
        f"embedded     {s.embedded:,} of {s.messages:,} stored message(s){note}",
        f"sqlite-vec   {'loaded' if s.vec_available else 'unavailable on this platform'}",
        f"codes        {'stale: `axio-context reindex` repairs them' if s.codes_stale else 'up to date'}",
        f"semantic     {semantic}",
        "keyword      FTS5: every committed message (the newest are folded in before a search)",
    ]


@cli.command("index")
@click.option("--json", "as_json", is_flag=True, help="Output JSON.")
@click.pass_context
def index_(ctx: click.Context, as_json: bool) -> None:
    """Show the search indexes: embedding model, coverage, sqlite-vec."""
    s = _with_db(ctx, False, lambda db: db.index_status())
    if as_json:
        echo_json(s)
        return
    click.echo("\n".join(_status_lines(s)))


def main() -> None:
    """The console script's entry point."""
    cli(prog_name="axio-context")
