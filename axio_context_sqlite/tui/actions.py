"""Fork, rename, delete (with confirmation) and export of one session: the same keys on the session
list and on an open transcript. Each is one library call through :meth:`.core.DatabaseApp.call`."""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any, ClassVar, Final, cast

from textual.binding import Binding, BindingType
from textual.screen import Screen

from axio_context.terminal import visible
from axio_context.transcript import FormatName

from ..admin.files import writing
from ..admin.live import Browsable
from .core import DatabaseApp, Failed
from .dialogs import AskScreen, ConfirmScreen

__all__ = ["EXPORT_FORMATS", "SessionActions", "export_format"]

#: File name endings an export understands, and the format each means.
EXPORT_FORMATS: Final[dict[str, FormatName]] = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".md": "markdown",
    ".markdown": "markdown",
}


def _file_name(sid: str) -> str:
    """``sid`` as the start of a file name to offer: characters a file name should not hold
    (a path separator, a control or bidi character) become ``_``."""
    return "".join("_" if c in "/\\" or visible(c) != c else c for c in sid)


def export_format(path: str) -> FormatName:
    """The export format a file name asks for by its ending (json when it has none we know)."""
    return EXPORT_FORMATS.get(Path(path).suffix.lower(), "json")


class SessionActions(Screen[None]):
    """A screen with a current session that can be forked, renamed, deleted and exported."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "fork", "Fork"),
        Binding("r", "rename", "Rename"),
        Binding("d", "delete", "Delete"),
        Binding("e", "export", "Export"),
    ]

    @property
    def browser(self) -> DatabaseApp:
        return cast(DatabaseApp, self.app)

    def current_session(self) -> str | None:
        """The session the keys act on (None: there is none)."""
        raise NotImplementedError

    async def session_changed(self, old: str, new: str | None) -> None:
        """After a fork (``new`` is the fork), rename (the new id) or delete (None)."""

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a database call off the message loop: while the database is locked it is retried,
        and the screen keeps answering keys meanwhile."""
        self.run_worker(work, group="actions", exit_on_error=False)

    def action_fork(self) -> None:
        sid = self.current_session()
        if sid is None:
            return

        async def fork() -> None:
            new = await self.browser.call(lambda db: db.fork(sid), f"fork {sid}")
            if not isinstance(new, Failed):
                self.notify(f"forked {sid} as {new}")
                await self.session_changed(sid, new)

        self.in_background(fork())

    def action_rename(self) -> None:
        sid = self.current_session()
        if sid is None:
            return

        async def rename(new: str) -> None:
            done = await self.browser.call(lambda db: db.rename(sid, new), f"rename {sid}")
            if not isinstance(done, Failed):
                self.notify(f"renamed {sid} to {new}")
                await self.session_changed(sid, new)

        def renamed(new: str | None) -> None:
            if new and new != sid:
                self.in_background(rename(new))

        # an id the terminal cannot show as it is (it holds a control) is not offered to edit
        self.app.push_screen(
            AskScreen(f"New id for session {sid}:", sid if visible(sid) == sid else ""), renamed
        )

    def action_delete(self) -> None:
        sid = self.current_session()
        if sid is None:
            return

        async def delete() -> None:
            gone = await self.browser.call(lambda db: db.delete([sid]), f"delete {sid}")
            if not isinstance(gone, Failed):
                self.notify(f"deleted {sid}" if gone else f"{sid} was already gone")
                await self.session_changed(sid, None)

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.in_background(delete())
            else:
                self.notify("nothing deleted")

        question = f"Delete session {sid}? Its forks keep their messages. (y/n)"
        self.app.push_screen(ConfirmScreen(question), confirmed)

    def action_export(self) -> None:
        sid = self.current_session()
        if sid is None:
            return

        async def export(dest: Path, fmt: FormatName) -> None:

            async def export_to(db: Browsable) -> int:
                # a temporary file renamed over ``dest`` when complete: never half an export
                with writing(dest, Path(db.path)) as f:
                    summary = await db.export(f.write, format=fmt, session_ids=[sid])
                return summary.messages

            done = await self.browser.call(export_to, f"export {sid}")
            if not isinstance(done, Failed):
                self.notify(f"exported {sid} ({done} messages, {fmt}) to {dest}")

        def chosen(name: str | None) -> None:
            if name:
                self.in_background(export(Path(name).expanduser(), export_format(name)))

        self.app.push_screen(
            AskScreen(f"Export {sid} to (.json, .jsonl or .md):", f"{_file_name(sid)[:12]}.json"), chosen
        )
