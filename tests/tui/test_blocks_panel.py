"""The browser shows an agent's memory blocks beside its sessions while the list is filtered by
that agent, on a SQLite file and on PostgreSQL; stored text in them shows as text, not markup
or terminal controls."""

from __future__ import annotations

from pathlib import Path

from textual.containers import VerticalScroll
from textual.widgets import DataTable, Input, Static

from axio_context.backends.registry import open_database
from axio_context.memory_blocks import MemoryBlock, StoredBlock
from axio_context.testing import text
from axio_context_sqlite.tui import BrowserApp
from axio_context_sqlite.tui.sessions import blocks_text
from tests.support.backends import Backend
from tests.support.hostile import FORBIDDEN, HOSTILE, MARKUP

SIZE = (160, 50)


def _app(path: str | Path) -> BrowserApp:
    return BrowserApp(path, poll_interval=0.05, retry_interval=0.05)


async def _until(pilot: object, check: object, what: str) -> None:
    """Let the app run until ``check()`` holds (a failsafe bound, not a timing assertion)."""
    for _ in range(400):
        if check():  # type: ignore[operator]
            return
        await pilot.pause(0.02)  # type: ignore[attr-defined]
    raise AssertionError(f"never happened: {what}")


async def test_an_agents_blocks_show_beside_its_sessions(backend_db: Backend) -> None:
    async with backend_db.open():
        await backend_db.store("plain", project="p").append(text("user", "hello"))
    async with open_database(backend_db.where) as db:
        blocks = db.memory_stores().blocks()
        await blocks.create(
            MemoryBlock("human", "Name: Ada\nLikes [bold]tea[/bold] \x1b[2J"), agent_id="support"
        )
        await blocks.create(MemoryBlock("rules", "be kind", read_only=True))
        await blocks.attach("rules", "support")
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        panel = app.screen.query_one("#blocks", VerticalScroll)
        await _until(pilot, lambda: app.screen.query_one("#sessions", DataTable).row_count == 1, "one row")
        assert not panel.display  # no agent filter: no panel
        await pilot.press("a", *"support")
        await _until(pilot, lambda: panel.display, "the panel")
        shown = str(app.screen.query_one("#blocks-text", Static).render())
        assert "memory blocks of support" in shown
        assert "human  v1  37/5000" in shown and "Name: Ada" in shown
        assert "Likes [bold]tea[/bold] \\x1b[2J" in shown  # as text: no markup, the control escaped
        assert "rules  v1  7/5000  (shared, read-only)" in shown and "be kind" in shown
        app.screen.query_one("#agent", Input).value = ""
        await _until(pilot, lambda: not panel.display, "the panel hidden again")


def test_the_panel_text_is_text() -> None:
    assert blocks_text("nobody", []).plain == "memory blocks of nobody\n(none)"


def test_hostile_block_text_reaches_the_panel_as_harmless_text() -> None:
    """A label, value and agent holding terminal escapes, C1 and bidi controls and Rich markup:
    the panel's text holds none of those characters, keeps the markup literal, and links nothing."""
    block = StoredBlock(
        label=f"l-{HOSTILE}",
        value=f"{HOSTILE}\nsecond {MARKUP}",
        limit=5000,
        description=HOSTILE,
        read_only=False,
        version=1,
        agent_id=f"a-{HOSTILE}",
        updated_at="2026-01-01T00:00:00Z",
    )
    panel = blocks_text(f"a-{HOSTILE}", [block])
    found = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(panel.plain)})
    assert not found, f"the panel holds {found}"
    assert "second [/][link=https://attacker.invalid/x]" in panel.plain  # literal, cut to the line
    assert not [s for s in panel.spans if "link" in str(s.style)]
    assert "\\x1b" in panel.plain  # the escape shown as its escape, not dropped unseen


async def test_the_search_screen_lists_block_hits_after_the_messages(backend_db: Backend) -> None:
    from axio_context_sqlite.tui.search import SearchScreen

    async with backend_db.open():
        await backend_db.store("chat", project="p").append(text("user", "zebra stripes"))
    async with open_database(backend_db.where) as db:
        await db.memory_stores().blocks().create(MemoryBlock("pets", "a [bold]zebra[/bold]"), agent_id="z")
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.screen.query_one("#sessions", DataTable).row_count == 1, "one row")
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"zebra")
        hits = app.screen.query_one("#hits", DataTable)
        await _until(pilot, lambda: hits.row_count == 2, "a message hit and a block hit")
        found = str(app.screen.query_one("#found", Static).render())
        assert "1 hits and 1 memory blocks for 'zebra'" in found
        row = [str(c) for c in hits.get_row("b0")]
        assert row[:3] == ["pets (z)", "v1", "block"] and "[bold]zebra[/bold]" in row[3]
        hits.focus()
        hits.move_cursor(row=1)
        await pilot.press("enter")  # a block has no session to open: the screen stays
        await pilot.pause(0.05)
        assert isinstance(app.screen, SearchScreen) and app.screen.current_session() is None
