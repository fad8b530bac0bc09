"""Fork, rename, delete (with confirmation) and export of one session: the same keys on the session
list and on an open transcript. Each is one library call through :meth:`.app.BrowserApp.call`."""

from __future__ import annotations

from pathlib import Path
from typing import Final, cast

from textual.binding import Binding
from textual.screen import Screen

from axio_context.transcript import FormatName

from ..admin.files import writing
from ..database import Database
from .app import BrowserApp, Failed
from .dialogs import AskScreen, ConfirmScreen

__all__ = ["EXPORT_FORMATS", "SessionActions", "export_format"]

#: File name endings an export understands, and the format each means.
EXPORT_FORMATS: Final[dict[str, FormatName]] = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".md": "markdown",
    ".markdown": "markdown",
}


def export_format(path: str) -> FormatName:
    """The export format a file name asks for by its ending (json when it has none we know)."""
    return EXPORT_FORMATS.get(Path(path).suffix.lower(), "json")


class SessionActions(Screen[None]):
    """A screen with a current session that can be forked, renamed, deleted and exported."""

    BINDINGS = [
        Binding("f", "fork", "Fork"),
        Binding("r", "rename", "Rename"),
        Binding("d", "delete", "Delete"),
        Binding("e", "export", "Export"),
    ]

    @property
    def browser(self) -> BrowserApp:
        return cast(BrowserApp, self.app)

    def current_session(self) -> str | None:
        """The session the keys act on (None: there is none)."""
        raise NotImplementedError

    async def session_changed(self, old: str, new: str | None) -> None:
        """After a fork (``new`` is the fork), rename (the new id) or delete (None)."""

    async def action_fork(self) -> None:
        sid = self.current_session()
        if sid is None:
            return
        new = await self.browser.call(lambda db: db.fork(sid), f"fork {sid}")
        if isinstance(new, Failed):
            return
        self.notify(f"forked {sid} as {new}")
        await self.session_changed(sid, new)

    def action_rename(self) -> None:
        sid = self.current_session()
        if sid is None:
            return

        async def renamed(new: str | None) -> None:
            if not new or new == sid:
                return
            done = await self.browser.call(lambda db: db.rename(sid, new), f"rename {sid}")
            if not isinstance(done, Failed):
                self.notify(f"renamed {sid} to {new}")
                await self.session_changed(sid, new)

        self.app.push_screen(AskScreen(f"New id for session {sid}:", sid), renamed)

    def action_delete(self) -> None:
        sid = self.current_session()
        if sid is None:
            return

        async def confirmed(yes: bool | None) -> None:
            if not yes:
                self.notify("nothing deleted")
                return
            gone = await self.browser.call(lambda db: db.delete([sid]), f"delete {sid}")
            if not isinstance(gone, Failed):
                self.notify(f"deleted {sid}" if gone else f"{sid} was already gone")
                await self.session_changed(sid, None)

        question = f"Delete session {sid}? Its forks keep their messages. (y/n)"
        self.app.push_screen(ConfirmScreen(question), confirmed)

    def action_export(self) -> None:
        sid = self.current_session()
        if sid is None:
            return

        async def chosen(name: str | None) -> None:
            if not name:
                return
            dest = Path(name).expanduser()
            fmt = export_format(name)

            async def export_to(db: Database) -> int:
                # a temporary file renamed over ``dest`` when complete: never half an export
                with writing(dest, db.path) as f:
                    summary = await db.export(f.write, format=fmt, session_ids=[sid])
                return summary.messages

            done = await self.browser.call(export_to, f"export {sid}")
            if not isinstance(done, Failed):
                self.notify(f"exported {sid} ({done} messages, {fmt}) to {dest}")

        self.app.push_screen(AskScreen(f"Export {sid} to (.json, .jsonl or .md):", f"{sid[:12]}.json"), chosen)
