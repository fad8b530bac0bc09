"""The browser's core: the open database and the one way every screen calls it.

Every database call goes through :meth:`DatabaseApp.call`: a locked database (another process
holds the lock past the busy timeout) is said in the header and tried again every
``retry_interval`` seconds, never a traceback; any other error of the library is one
notification line, and the screen goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import ClassVar, TypeVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel

from axio_context.backends import Browsable, is_url, open_database
from axio_context.errors import AxioContextError, DatabaseLockedError
from axio_context.locations import shown_location
from axio_context.terminal import visible

__all__ = ["FAILED", "DatabaseApp", "Failed"]

T = TypeVar("T")

#: What the header says while the database is locked.
LOCKED = "the database is locked by another process; retrying"


class Failed:
    """The type of :data:`FAILED`: a call that failed and was already reported."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "FAILED"


#: Returned by :meth:`DatabaseApp.call` when the call failed (the person has been told why).
FAILED = Failed()


@contextlib.asynccontextmanager
async def open_browsable(
    where: str | Path, *, busy_timeout: float, key: bytes | None = None
) -> AsyncIterator[Browsable]:
    """The database at ``where`` (a file, which must exist, or a URL) as the screens read it:
    opened by the registry, through its backend's browser (``key``: an encrypted file's)."""
    async with open_database(where, create=False, busy_timeout=busy_timeout, key=key) as db:
        yield db.browser()


class DatabaseApp(App[None]):
    """An app over one database (a file or a ``postgresql://`` URL) that its screens reach
    through :meth:`call`."""

    TITLE = "axio-context"
    CSS_PATH = Path(__file__).with_name("browser.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    def __init__(
        self,
        path: str | Path,
        *,
        project: str | None = None,
        session: str | None = None,
        full: bool = False,
        busy_timeout: float = 5.0,
        retry_interval: float = 1.0,
        poll_interval: float = 0.5,
        page_size: int = 100,
        key: bytes | None = None,
    ) -> None:
        super().__init__()
        self._key = key  # an encrypted file's key (None: the environment's, if any); never shown
        self.path: str | Path = path if is_url(path) else Path(path)
        self.project = project
        self.session = session
        self.full = full
        self.busy_timeout = busy_timeout
        self.retry_interval = retry_interval
        self.poll_interval = poll_interval
        self.page_size = page_size
        #: The open database, once :attr:`ready` is set.
        self.db: Browsable | None = None
        self.ready = asyncio.Event()
        #: True while a call waits for another process to release the database.
        self.locked = False
        #: Calls now waiting on the lock: the notice stays until the last of them gets through
        #: (a read that succeeds meanwhile, as reads do beside a writer, does not take it down).
        self._waiting = 0
        self._db_stack = contextlib.AsyncExitStack()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification (they name sessions, files and errors: stored text) as plain
        text, never markup, with no control character (:func:`~axio_context.terminal.visible`)."""
        super().notify(
            visible(message, lines=False),
            title=visible(title, lines=False),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    @property
    def shown(self) -> str:
        """The database as the header names it (a URL's password hidden)."""
        return visible(shown_location(self.path), lines=False)

    def on_mount(self) -> None:
        self.sub_title = self.shown
        self.run_worker(self._open(), group="open", exit_on_error=False)

    async def _open(self) -> None:
        while True:
            try:
                opened = open_browsable(self.path, busy_timeout=self.busy_timeout, key=self._key)
                self.db = await self._db_stack.enter_async_context(opened)
            except DatabaseLockedError:
                self.show_locked()
                await asyncio.sleep(self.retry_interval)
                continue
            except (AxioContextError, OSError) as exc:
                self.sub_title = visible(f"cannot open {self.shown}: {exc}", lines=False)
                self.notify(str(exc), title="cannot open the database", severity="error", timeout=30)
                return
            break
        self.clear_locked()
        self.ready.set()
        await self.opened()

    async def opened(self) -> None:
        """Called once the database is open."""

    async def on_unmount(self) -> None:
        await self._db_stack.aclose()

    def show_locked(self, exc: BaseException | None = None) -> None:
        """Say (once per stretch) that the database is locked and calls are being retried."""
        self.sub_title = f"{LOCKED}…"
        if not self.locked:
            self.locked = True
            self.notify(f"{LOCKED} every {self.retry_interval:g} s", severity="warning")

    def clear_locked(self) -> None:
        """The database answered again: take the notice down."""
        if self.locked:
            self.locked = False
            self.notify("the database is available again")
        self.sub_title = self.shown

    async def call(self, make: Callable[[Browsable], Awaitable[T]], what: str) -> T | Failed:
        """``make(db)``, retried while the database is locked; any other error of the library
        (or a refused value) becomes one notification naming ``what`` failed, and FAILED."""
        await self.ready.wait()
        assert self.db is not None
        waited = False
        try:
            while True:
                try:
                    return await make(self.db)
                except DatabaseLockedError as exc:
                    if not waited:
                        waited = True
                        self._waiting += 1
                    self.show_locked(exc)
                    await asyncio.sleep(self.retry_interval)
                except (AxioContextError, ValueError, OSError) as exc:
                    self.notify(f"cannot {what}: {exc}", severity="error", timeout=10)
                    return FAILED
        finally:
            if waited:
                self._waiting -= 1
                if self._waiting == 0:
                    self.clear_locked()
