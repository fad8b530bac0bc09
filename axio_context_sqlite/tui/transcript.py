"""One session's transcript: roles, tool calls folded, media as one line, compaction checkpoints
marked; the model's view by default, every message with ``v`` (or ``browse --full``).

Only a window of the last messages is read (``[`` reads earlier ones), and a follower
(``follow`` of :class:`~..admin.live.Browsable`) adds the messages other processes append while it is open.
"""

from __future__ import annotations

from typing import ClassVar, cast

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible, Footer, Header, Static

from axio_context.errors import AxioContextError, SessionNotFoundError
from axio_context.messages import Message
from axio_context.terminal import visible
from axio_context.transcript import CheckpointRecord, MessageRecord

from ..store.browsing import MAX_PAGE
from .actions import SessionActions
from .core import Failed
from .rendering import checkpoint_line, count, parts, shown

__all__ = ["WINDOW", "MessageView", "TranscriptScreen"]

#: Messages read when a transcript opens, and each time ``[`` reads earlier ones.
WINDOW = 200


class MessageView(Vertical):
    """One message: a title line (position, role, time) and its parts, tool calls folded."""

    def __init__(self, position: int | None, message: MessageRecord | Message, when: str = "") -> None:
        classes = f"message role-{message.role}" + (" summary" if position is None else "")
        super().__init__(id=None if position is None else f"m-{position}", classes=classes)
        self.position = position
        self.message = message
        self.when = when

    def compose(self) -> ComposeResult:
        where = "summary" if self.position is None else f"#{self.position}"
        when = f" · {self.when[:19].replace('T', ' ')}" if self.when else ""
        yield Static(shown(f"{where} · {self.message.role}{when}", style="bold"), classes="title")
        for part in parts(self.message.content):
            body = Static(shown(part.text), classes=f"part {part.kind}")
            if part.title is not None:
                # a Text title: Collapsible reads a str title as markup
                title = cast(str, shown(part.title))
                yield Collapsible(body, title=title, collapsed=True, classes=f"fold {part.kind}")
            else:
                yield body


class TranscriptScreen(SessionActions):
    """A session's messages; Escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("q", "app.quit", "Quit"),
        Binding("v", "toggle_full", "Full/model view"),
        Binding("left_square_bracket", "earlier", "Earlier"),
        Binding("o", "unfold", "Unfold all"),
    ]

    def __init__(self, session_id: str, *, full: bool = False, jump: int | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.full = full
        self.jump = jump
        self.start = 0
        self.first = 0  # the first position this view can show (a checkpoint's, in the model view)
        self.end = 0
        self.checkpoints: list[CheckpointRecord] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield VerticalScroll(id="transcript")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = visible(self.session_id, lines=False)
        self.reload()

    def reload(self) -> None:
        """Read the transcript again in a worker (so a locked database never stalls the keys)."""
        self.run_worker(self.load(), group="load", exclusive=True)

    @property
    def body(self) -> VerticalScroll:
        return self.query_one("#transcript", VerticalScroll)

    async def load(self) -> None:
        """Read the window (reaching back to the message to jump to) and start following."""
        self.workers.cancel_group(self, "follow")
        limit = WINDOW
        if self.jump is not None:
            info = await self.browser.call(lambda db: db.info(self.session_id), "read the session")
            if isinstance(info, Failed):
                return
            limit = min(max(WINDOW, info.message_count - self.jump + 1), MAX_PAGE)
        full = self.full
        view = await self.browser.call(
            lambda db: db.transcript(self.session_id, full=full, limit=limit), "read the session"
        )
        if isinstance(view, Failed):
            return
        if self.jump is not None and not full and self.jump < view.start and view.summary is not None:
            self.full = True  # the message was summarised away: show every message instead
            await self.load()
            return
        h = view.header
        self.checkpoints = h.checkpoints
        self.first = 0 if full or not h.checkpoints else h.checkpoints[-1].position
        self.start, self.end = view.start, h.message_count
        body = self.body
        await body.remove_children()
        lineage = f", forked from {h.parent_id} at {h.fork_position}" if h.parent_id else ""
        what = "every message" if full else "the model's view"
        head = (
            f"{h.title or h.id}  ·  {count(h.message_count - view.hidden, 'message')}{lineage}"
            f"  ·  project {h.project or '-'}"
            f"  ·  {h.input_tokens:,} in / {h.output_tokens:,} out tokens  ·  {what} (v switches)"
        )
        widgets: list[Widget] = [Static(shown(head), id="header")]
        if view.summary is not None:
            latest = h.checkpoints[-1]
            widgets.append(
                Static(shown(checkpoint_line(latest) + "  (v: every message)"), classes="checkpoint")
            )
            widgets += [MessageView(None, m) for m in view.summary]
        widgets.append(Static("", id="earlier"))
        widgets += self._views(view.start, view.messages)
        await body.mount_all(widgets)
        self._update_earlier()
        if self.jump is not None:
            self.call_after_refresh(self.show_position, self.jump)
            self.jump = None
        else:
            body.scroll_end(animate=False)
        self.run_worker(self.follow(), group="follow", exclusive=True, exit_on_error=False)

    def _views(self, start: int, messages: list[MessageRecord]) -> list[Widget]:
        """Message widgets for positions from ``start``, with the markers of the checkpoints
        among them (in the model view only the latest's, shown above the summary)."""
        out: list[Widget] = []
        marks = {cp.position: cp for cp in self.checkpoints} if self.full else {}
        for i, m in enumerate(messages):
            cp = marks.get(start + i)
            if cp is not None and cp.position > 0:
                out.append(Static(shown(checkpoint_line(cp)), classes="checkpoint"))
            out.append(MessageView(start + i, m, m.created_at))
        end = start + len(messages)
        if end in marks and end > 0:
            out.append(Static(shown(checkpoint_line(marks[end])), classes="checkpoint"))
        return out

    def _update_earlier(self) -> None:
        hidden = self.start - self.first
        earlier = self.query_one("#earlier", Static)
        earlier.update(f"… {hidden} earlier messages ([ reads {min(hidden, WINDOW)} more)" if hidden else "")
        earlier.display = bool(hidden)

    def show_position(self, position: int) -> None:
        """Scroll to a message and mark it (a search hit jumped to)."""
        for w in self.query(".target"):
            w.remove_class("target")
        found = self.query(f"#m-{position}")
        if found:
            found.first().add_class("target")
            self.body.scroll_to_widget(found.first(), animate=False, top=True)

    async def follow(self) -> None:
        """Add what other processes append, until the screen closes."""
        db = self.browser.db
        assert db is not None
        stream = db.follow(
            self.session_id, self.end, interval=self.browser.poll_interval, on_locked=self.browser.show_locked
        )
        try:
            async for update in stream:
                self.browser.clear_locked()
                if update.reset:
                    self.notify("the session was rewritten by another process: read again")
                    self.reload()
                    return
                at_end = self.body.is_vertical_scroll_end
                await self.body.mount_all(self._views(update.start, update.messages))
                self.end = update.start + len(update.messages)
                if at_end:
                    self.body.scroll_end(animate=False)
        except SessionNotFoundError:
            self.notify(f"session {self.session_id} was deleted", severity="warning")
        except AxioContextError as exc:
            self.notify(f"stopped following: {exc}", severity="error")
        finally:
            await stream.aclose()

    def action_earlier(self) -> None:
        self.run_worker(self.earlier(), group="earlier", exclusive=True)

    async def earlier(self) -> None:
        """Read the ``WINDOW`` messages before the first one shown."""
        if self.start <= self.first:
            return
        start = max(self.first, self.start - WINDOW)
        got = await self.browser.call(
            lambda db: db.messages(self.session_id, start, self.start), "read earlier messages"
        )
        if isinstance(got, Failed):
            return
        _, messages = got
        widgets = self._views(start, messages)
        if widgets:
            await self.body.mount_all(widgets, after=self.query_one("#earlier"))
        self.start = start
        self._update_earlier()

    def action_toggle_full(self) -> None:
        self.full = not self.full
        self.reload()

    def action_unfold(self) -> None:
        folds = list(self.query(Collapsible))
        close = bool(folds) and all(not c.collapsed for c in folds)
        for c in folds:
            c.collapsed = close

    def current_session(self) -> str | None:
        return self.session_id

    async def session_changed(self, old: str, new: str | None) -> None:
        if new is None:
            self.app.pop_screen()
            return
        if new != old and self.end and new:
            # a rename keeps this transcript, under its new id; a fork opens the fork
            self.session_id = new
            self.sub_title = visible(new, lines=False)
            self.reload()
