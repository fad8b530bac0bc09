"""``axio-context browse``: the session list first, or straight into one session's transcript."""

from __future__ import annotations

from textual.screen import Screen

from .core import DatabaseApp, Failed
from .sessions import SessionsScreen
from .transcript import TranscriptScreen

__all__ = ["BrowserApp"]


class BrowserApp(DatabaseApp):
    """Sessions, transcripts, search, fork/rename/delete/export, live updates."""

    def get_default_screen(self) -> Screen[None]:
        return SessionsScreen()

    async def opened(self) -> None:
        if self.session is not None:
            sid = await self.call(lambda db: db.resolve(self.session or ""), "open the session")
            if not isinstance(sid, Failed):
                await self.push_screen(TranscriptScreen(sid, full=self.full))
