"""The session list: the last active first, forks under their parent, filtered by text and
project, read one page at a time as the cursor nears the end (so 10,000 sessions open as fast as
ten), and kept current: when another process commits (``data_version`` changed) the pages
shown are read again. Filtered by an agent, the agent's memory blocks show beside its sessions.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from axio_context.memory_blocks import StoredBlock

from ..store.browsing import MAX_PAGE, TreeRow
from .actions import SessionActions
from .core import Failed
from .rendering import one_line
from .rendering import shown as as_text

__all__ = ["SessionsScreen", "blocks_text", "row_label"]

#: Load the next page when the cursor comes this close to the last row.
NEAR_END = 5
#: Wait this long after the last key in a filter before reading again.
DEBOUNCE = 0.25
#: The lines of each block's value the panel shows.
BLOCK_LINES = 4


def row_label(row: TreeRow, shown: str) -> str:
    """The session column: the id as shown, a fork indented under its parent (flat: marked)."""
    if row.depth:
        return "  " * (row.depth - 1) + "└ " + shown
    return ("↳ " + shown) if row.info.parent_id else shown


def blocks_text(agent: str, blocks: list[StoredBlock]) -> Text:
    """An agent's memory blocks for the panel beside its sessions: each label with its version,
    size and flags, then the first lines of its value (stored text, shown as text, not markup)."""
    out = Text()
    out.append_text(as_text(f"memory blocks of {one_line(agent, 40)}", "bold"))
    if not blocks:
        out.append("\n(none)")
    for b in blocks:
        flags = ", ".join(
            f for f in ("shared" if not b.agent_id else "", "read-only" if b.read_only else "") if f
        )
        out.append("\n\n")
        out.append_text(as_text(one_line(b.label, 40), "bold"))
        out.append(f"  v{b.version}  {len(b.value)}/{b.limit}" + (f"  ({flags})" if flags else ""), "dim")
        lines = b.value.splitlines()
        for line in lines[:BLOCK_LINES]:
            out.append("\n")
            out.append_text(as_text(one_line(line, 60)))
        if len(lines) > BLOCK_LINES:
            out.append("\n…", "dim")
    return out


class SessionTable(DataTable[object]):
    """The session table: Home and End go to the first and the last session (a row table's own
    Home and End scroll sideways); End reads the pages not read yet first."""

    def action_scroll_home(self) -> None:
        self.action_scroll_top()

    def action_scroll_end(self) -> None:
        screen = self.screen
        if isinstance(screen, SessionsScreen) and screen.next_cursor is not None:
            screen.run_worker(screen.to_end(), group="end", exclusive=True)
        else:
            self.action_scroll_bottom()


class SessionsScreen(SessionActions):
    """Every session; Enter opens one, ``/`` searches them all."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=True),
        Binding("slash", "search", "Search"),
        Binding("t", "focus_filter('text')", "Filter"),
        Binding("p", "focus_filter('project')", "Project"),
        Binding("a", "focus_filter('agent')", "Agent"),
        Binding("q", "app.quit", "Quit"),
        Binding("ctrl+r", "reload", "Reload"),
        Binding("escape", "leave_filter", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[TreeRow] = []
        self.next_cursor: str | None = None
        self.heads = 0
        self.version: object = None
        self._filter_timer: Timer | None = None
        #: Where the cursor goes after the next reload (a fork just made, a new id).
        self.wanted: str | None = None
        self._loading = False

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="filters"):
            yield Input(placeholder="filter: id, title, preview (t)", id="text")
            yield Input(placeholder="project (p)", id="project", value=self.browser.project or "")
            yield Input(placeholder="agent (a)", id="agent")
        with Horizontal(id="lists"):
            yield SessionTable(id="sessions", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="blocks"):
                yield Static(id="blocks-text")
        yield Static("opening the database…", id="count")
        yield Footer()

    async def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("session", key="session")
        table.add_column("title / first message", key="preview")
        table.add_column("msgs", key="msgs")
        table.add_column("project", key="project")
        table.add_column("updated", key="updated")
        table.focus()
        self.start_reload()
        self.set_interval(self.browser.poll_interval, self.check_changes)

    # -- reading -----------------------------------------------------------------------------------

    def _agent(self) -> str | None:
        return self.query_one("#agent", Input).value.strip() or None

    async def _filters(self) -> tuple[str | None, str | None]:
        text = self.query_one("#text", Input).value.strip() or None
        project = self.query_one("#project", Input).value.strip() or None
        if project is not None:
            stored = await self.browser.call(lambda db: db.stored_project(project), "read the project")
            project = project if isinstance(stored, Failed) else stored
        return text, project

    def start_reload(self, keep: int | None = None) -> None:
        """Read the list again in the one loading worker (a newer reload replaces an older one)."""
        self.run_worker(self.reload(keep), group="load", exclusive=True)

    async def reload(self, keep: int | None = None) -> None:
        """Read the list again from the top (``keep`` heads at least: what was shown before).

        Everything is read first and the table replaced in one step with no await in between,
        so a reload cancelled by a newer one never leaves the table half-filled.
        """
        self._loading = True
        try:
            text, project = await self._filters()
            limit = min(max(self.browser.page_size, keep or 0), MAX_PAGE)
            page = await self.browser.call(
                lambda db: db.session_tree(
                    project, text=text, limit=limit, agent_id=self._agent(), sort="updated"
                ),
                "list the sessions",
            )
            if isinstance(page, Failed):
                return
            version = await self.browser.call(lambda db: db.data_version(), "check for changes")
            shown = await self._shown(page.rows)
            self.version = None if isinstance(version, Failed) else version
            tables = self.query(DataTable)
            if not tables:  # the screen was taken down (the app quitting) while this read
                return
            table = tables.first()
            current = self.wanted or self.current_session()
            self.wanted = None
            agent = self._agent()
            blocks = None if agent is None else await self._blocks(agent)
            table.clear()
            self.rows, self.heads, self.next_cursor = [], 0, None
            self._add(page.rows, page.next_cursor, shown)
            self._show_blocks(agent, blocks)
            if current is not None and current in table.rows:
                table.move_cursor(row=table.get_row_index(current))
        finally:
            self._loading = False

    async def _blocks(self, agent: str) -> list[StoredBlock] | None:
        found = await self.browser.call(
            lambda db: db.memory_blocks().list_blocks(agent_id=agent), "read the agent's memory blocks"
        )
        return None if isinstance(found, Failed) else found

    def _show_blocks(self, agent: str | None, blocks: list[StoredBlock] | None) -> None:
        """The panel beside the sessions: shown only while the list is filtered by an agent."""
        panel = self.query_one("#blocks", VerticalScroll)
        panel.display = agent is not None and blocks is not None
        if agent is not None and blocks is not None:
            self.query_one("#blocks-text", Static).update(blocks_text(agent, blocks))

    async def more(self, limit: int | None = None) -> None:
        """The next page (``limit`` sessions; the page size by default), after the rows shown."""
        if self.next_cursor is None or self._loading:
            return
        self._loading = True
        try:
            text, project = await self._filters()
            cursor = self.next_cursor
            page = await self.browser.call(
                lambda db: db.session_tree(
                    project,
                    text=text,
                    limit=limit or self.browser.page_size,
                    cursor=cursor,
                    agent_id=self._agent(),
                    sort="updated",
                ),
                "list more sessions",
            )
            if isinstance(page, Failed):
                return
            shown = await self._shown(page.rows)
            if cursor == self.next_cursor:
                self._add(page.rows, page.next_cursor, shown)
        finally:
            self._loading = False

    async def to_end(self) -> None:
        """Read every page not read yet (:data:`MAX_PAGE` sessions a read), then put the cursor on
        the last row: what End means in a list read a page at a time."""
        while self.next_cursor is not None:
            cursor = self.next_cursor
            await self.more(MAX_PAGE)
            if self.next_cursor == cursor:  # another read is running, or this one failed
                await asyncio.sleep(0.05)
        table = self.query_one(DataTable)
        if table.row_count:
            table.move_cursor(row=table.row_count - 1)

    async def _shown(self, rows: list[TreeRow]) -> dict[str, str]:
        shown = await self.browser.call(
            lambda db: db.short_ids([r.info.session_id for r in rows]), "shorten the ids"
        )
        return {} if isinstance(shown, Failed) else shown

    def _add(self, rows: list[TreeRow], next_cursor: str | None, shown: dict[str, str]) -> None:
        table = self.query_one(DataTable)
        for r in rows:
            i = r.info
            if i.session_id in table.rows:  # moved down a page by sessions created meanwhile
                continue
            table.add_row(
                as_text(row_label(r, shown.get(i.session_id, i.session_id))),
                as_text(one_line(i.title or i.preview, 70)),
                str(i.message_count),
                as_text(one_line(i.project or "", 30)),
                (i.updated_at or i.created_at)[:19].replace("T", " "),
                key=i.session_id,
            )
        self.rows += rows
        self.heads += sum(1 for r in rows if r.depth == 0)
        self.next_cursor = next_cursor
        more = ", more below" if next_cursor else ""
        self.query_one("#count", Static).update(f"{table.row_count} sessions shown{more}")

    async def on_screen_resume(self) -> None:
        # back from a transcript or the search, where this connection may have written: its own
        # commits do not change data_version, so read again.
        if self.browser.ready.is_set():
            self.start_reload(keep=self.heads)

    async def check_changes(self) -> None:
        """Read the list again when another process committed since it was read."""
        if self._loading or not self.browser.ready.is_set() or self.browser.locked:
            return
        version = await self.browser.call(lambda db: db.data_version(), "check for changes")
        if not isinstance(version, Failed) and version != self.version:
            self.start_reload(keep=self.heads)

    # -- events --------------------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row >= event.data_table.row_count - NEAR_END and self.next_cursor is not None:
            self.run_worker(self.more(), group="more", exclusive=True)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def on_input_changed(self, event: Input.Changed) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(DEBOUNCE, self.start_reload)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    # -- actions -------------------------------------------------------------------------------------

    def current_session(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return key

    async def session_changed(self, old: str, new: str | None) -> None:
        self.wanted = new  # the cursor goes to the fork, or the renamed session
        self.start_reload(keep=self.heads)

    def action_open(self) -> None:
        from .transcript import TranscriptScreen

        sid = self.current_session()
        if sid is not None:
            self.app.push_screen(TranscriptScreen(sid, full=self.browser.full))

    def action_search(self) -> None:
        from .search import SearchScreen

        self.app.push_screen(SearchScreen())

    def action_focus_filter(self, which: str) -> None:
        self.query_one(f"#{which}", Input).focus()

    def action_leave_filter(self) -> None:
        self.query_one(DataTable).focus()

    def action_reload(self) -> None:
        self.start_reload(keep=self.heads)
