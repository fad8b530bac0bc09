"""Search as you type across every session (keyword search, the FTS5 index) and the memory blocks
(listed after the messages, ``block`` in the role column); Enter on a message hit opens its
session at that message."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from axio_context.errors import SearchQueryError

from ..admin.live import Browsable
from ..search.engine import SearchResults
from .actions import SessionActions
from .core import Failed
from .rendering import highlighted
from .rendering import shown as as_text

__all__ = ["HITS", "SearchScreen"]

#: Hits shown for a query.
HITS = 50
#: Wait this long after the last key before searching.
DEBOUNCE = 0.2


class SearchScreen(SessionActions):
    """A query line and its hits, best first; Down goes to the hits, Enter opens one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("down", "to_hits", show=False),
    ]

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.initial = query
        self.query_text = ""
        self._search_timer: Timer | None = None
        self.results: SearchResults | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(value=self.initial, placeholder="search every session", id="query")
        yield DataTable(id="hits", cursor_type="row")
        yield Static("type to search", id="found")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("session", key="session")
        table.add_column("#", key="position")
        table.add_column("role", key="role")
        table.add_column("snippet", key="snippet")
        self.query_one(Input).focus()
        if self.initial:
            self.run_worker(self.search(self.initial), group="search", exclusive=True)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._search_timer is not None:
            self._search_timer.stop()
        value = event.value
        self._search_timer = self.set_timer(
            DEBOUNCE, lambda: self.run_worker(self.search(value), group="search", exclusive=True)
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_to_hits()

    async def search(self, query: str) -> None:
        """Run ``query`` and show its hits (a query the index cannot take says why, in one line)."""
        found = self.query_one("#found", Static)
        table = self.query_one(DataTable)
        if not query.strip():
            table.clear()
            found.update("type to search")
            return

        async def run(db: Browsable) -> SearchResults | str:
            try:
                return await db.search(query, k=HITS, mode="keyword")
            except SearchQueryError as exc:
                return str(exc)

        results = await self.browser.call(run, "search")
        if isinstance(results, Failed):
            return
        if isinstance(results, str):
            table.clear()
            found.update(as_text(results))
            return
        shown = await self.browser.call(
            lambda db: db.short_ids([h.session_id for h in results.hits]), "search"
        )
        self.query_text, self.results = query, results
        table.clear()
        for n, hit in enumerate(results.hits):
            label = shown.get(hit.session_id, hit.session_id) if isinstance(shown, dict) else hit.session_id
            table.add_row(
                as_text(label),
                str(hit.position),
                as_text(hit.role),
                highlighted(hit.snippet, hit.highlights, 100),
                key=str(n),
            )
        for n, block in enumerate(results.blocks):
            table.add_row(
                as_text(f"{block.label} ({block.agent_id or 'shared'})"),
                f"v{block.version}",
                "block",
                highlighted(block.snippet, block.highlights, 100),
                key=f"b{n}",
            )
        unindexed = f" ({results.unindexed} messages not indexed yet)" if results.unindexed else ""
        blocks = f" and {len(results.blocks)} memory blocks" if results.blocks else ""
        found.update(
            as_text(
                f"{len(results.hits)} hits{blocks} for {query!r}{unindexed}"
                if results.hits or results.blocks
                else "no match"
            )
        )

    def action_to_hits(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        from .transcript import TranscriptScreen

        event.stop()
        if self.results is None or event.row_key.value is None or event.row_key.value.startswith("b"):
            return  # a memory block: no session to open
        hit = self.results.hits[int(event.row_key.value)]
        self.app.push_screen(TranscriptScreen(hit.session_id, full=self.browser.full, jump=hit.position))

    def current_session(self) -> str | None:
        table = self.query_one(DataTable)
        if self.results is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return None if key is None or key.startswith("b") else self.results.hits[int(key)].session_id

    async def session_changed(self, old: str, new: str | None) -> None:
        if self.query_text:
            await self.search(self.query_text)
