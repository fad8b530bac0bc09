"""Printing results: tables for people, JSON for programs, short ids, progress bars."""

from __future__ import annotations

import codecs
import functools
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from axio_context.codec import encode_json, format_json
from axio_context.messages import SessionInfo
from axio_context.terminal import escaped_json
from axio_context.terminal import visible as visible  # the printers import it from here

from .app import PROGRESS_MIN
from .backends import OpenDatabase
from .options import one_format


class Column:
    """One column of a table for people; ``visible``: its cells are already made safe for a
    terminal (and may hold the styling we add), so they are not escaped again."""

    def __init__(
        self, key: str, title: str, width: int | None = None, right: bool = False, visible: bool = False
    ) -> None:
        self.key, self.title, self.width, self.right, self.visible = key, title, width, right, visible


def one_line(text: str) -> str:
    """A stored field inside a line for people: kept on that line (newlines and tabs escaped
    too), with no control; :func:`say` prints the line."""
    return visible(text, lines=False)


def say(text: str, err: bool = False) -> None:
    """Print a line for people: through :func:`~axio_context.terminal.visible`, so stored text
    in it cannot send the terminal commands."""
    click.echo(visible(text), err=err)


def _cell(value: Any, width: int | None, safe: bool = False) -> str:
    text = "" if value is None else str(value).replace("\n", " ").replace("\t", " ")
    text = text if safe else visible(text)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


class ShownStream:
    """A binary output people may be watching (an export on stdout): markdown passes through
    :func:`~axio_context.terminal.visible`, JSON through :func:`~axio_context.terminal.escaped_json`
    (the same value). A file written with ``-o`` keeps the exact text instead."""

    def __init__(self, out: Any, as_json: bool) -> None:
        self.out, self.as_json = out, as_json
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")

    def _write(self, text: str) -> None:
        if text:
            data = (text if self.as_json else visible(text)).encode("utf-8", "surrogateescape")
            self.out.write(escaped_json(data) if self.as_json else data)

    def write(self, data: bytes) -> None:
        self._write(self._decoder.decode(data))

    def flush(self) -> None:
        self._write(self._decoder.decode(b"", final=True))
        self.out.flush()


def echo_json(value: Any, indent: int = 2) -> None:
    """Print ``value`` as JSON: indented (``--json``), or on one line with ``indent=0``."""
    # bytes: always UTF-8; C1 and bidi controls as \u escapes (JSON escapes C0 itself)
    click.echo(escaped_json(format_json(value, indent=indent)))


def page(text: str, no_pager: bool = False) -> None:
    """Print ``text`` (which ends with its own newline), through the pager (``$PAGER``, else
    ``less``) when stdout is a terminal, the text is taller than it and ``no_pager`` is off."""
    if not no_pager and sys.stdout.isatty() and text.count("\n") >= shutil.get_terminal_size().lines:
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=False)


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
            click.echo(escaped_json(encode_json(row)))
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


def local_time(iso: str) -> str:
    if not iso:
        return ""
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")


@functools.cache
def _home_dir() -> str:
    return str(Path.home())


def tilde(path: str | None) -> str | None:
    if path is None:
        return None
    home = _home_dir()
    return "~" + path[len(home) :] if path == home or path.startswith(home + os.sep) else path


def info_dict(info: SessionInfo) -> dict[str, Any]:
    return {f: getattr(info, f) for f in SessionInfo.__struct_fields__}


async def shown_ids(db: OpenDatabase, ids: Iterable[str | None]) -> dict[str, str]:
    """How each id appears in a table (see :meth:`OpenDatabase.short_ids`)."""
    return await db.short_ids(ids)


async def shown_for_infos(db: OpenDatabase, infos: Sequence[SessionInfo]) -> dict[str, str]:
    return await shown_ids(db, [x for i in infos for x in (i.session_id, i.parent_id)])


def info_row(info: SessionInfo, shown: dict[str, str]) -> dict[str, Any]:
    fork = None
    if info.parent_id is not None:
        fork = shown[info.parent_id] + ("" if info.fork_position is None else f"@{info.fork_position}")
    return {
        "id": shown[info.session_id],
        "project": tilde(info.project),
        "created": local_time(info.created_at),
        "updated": local_time(info.updated_at),
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


#: The column list-sessions adds when an agent's session is listed (docs/agents.md).
AGENT_COLUMN = Column("agent_id", "AGENT")


def with_agent(row: dict[str, Any], agent: tuple[str, str] | None) -> dict[str, Any]:
    """``row`` with the agent and thread of an agent's session (unchanged for any other)."""
    return row if agent is None else {**row, "agent_id": agent[0], "thread_id": agent[1]}


def human_size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class Progress:
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


class StageProgress:
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
