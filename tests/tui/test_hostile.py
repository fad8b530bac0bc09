"""The browser over a database whose every stored field is hostile (tests/support/hostile.py):
what it would send to the terminal holds no control, C1 or bidi character and no hyperlink;
Rich markup in stored text stays literal and never stops it (no MarkupError); search highlights
are styles on spans, so the matched word and the text around it are kept."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.segment import Segment
from rich.text import Text
from textual._compositor import LayoutUpdate
from textual.widgets import DataTable, Input

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.tui import BrowserApp
from axio_context_sqlite.tui.dialogs import AskScreen, ConfirmScreen
from axio_context_sqlite.tui.search import SearchScreen
from axio_context_sqlite.tui.transcript import MessageView, TranscriptScreen
from tests.support.hostile import FORBIDDEN, MARKUP, SESSION, fill

SIZE = (200, 60)


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.db"
    asyncio.run(fill(path))

    async def more() -> None:
        async with connect(path) as conn:
            s = SQLiteContextStore(conn, "plain", project="/work/plain")
            await s.append(text("user", "[Migration] Refactor the login handler"))

    asyncio.run(more())
    return path


def _segments(app: BrowserApp) -> Iterator[Segment]:
    """Everything the screen would send to the terminal now, segment by segment."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert isinstance(update, LayoutUpdate)
    for line in update.strips:
        for strip in line:
            yield from strip


def _screen(app: BrowserApp) -> str:
    return "".join(s.text for s in _segments(app) if not s.control)


def assert_harmless(app: BrowserApp, what: str) -> None:
    shown = _screen(app)
    found = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(shown)})
    assert not found, f"{what}: the screen holds {found}"
    links = {s.style.link for s in _segments(app) if s.style is not None and s.style.link}
    assert not links, f"{what}: live links {links}"


async def _until(pilot: object, check: object, what: str) -> None:
    for _ in range(400):
        if check():  # type: ignore[operator]
            return
        await pilot.pause(0.02)  # type: ignore[attr-defined]
    raise AssertionError(f"never happened: {what}")


def _app(path: Path, **kw: object) -> BrowserApp:
    return BrowserApp(path, poll_interval=0.05, retry_interval=0.05, **kw)  # type: ignore[arg-type]


def _rows(app: BrowserApp) -> int:
    return app.screen.query_one("#sessions", DataTable).row_count


async def test_the_session_list_shows_stored_text_as_text(hostile_db: Path) -> None:
    app = _app(hostile_db)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _rows(app) == 3, "the sessions")
        assert_harmless(app, "the session list")
        shown = _screen(app)
        assert "\\x1b]0;pwned\\x07" in shown and "\\u202e" in shown  # there, and visibly so
        assert "[/][link=https://attacker.invalid/x]" in shown  # markup kept literal (the project)
        table = app.screen.query_one("#sessions", DataTable)
        table.move_cursor(row=[r.key.value for r in table.ordered_rows].index(SESSION))
        # every question that names the session, and every notification after an action
        await pilot.press("r")
        await _until(pilot, lambda: isinstance(app.screen, AskScreen), "the rename question")
        assert_harmless(app, "the rename question")
        await pilot.press("escape")
        await pilot.press("d")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the delete question")
        assert_harmless(app, "the delete question")
        await pilot.press("n")
        await pilot.press("f")
        await _until(pilot, lambda: _rows(app) == 4, "the fork")
        await _until(pilot, lambda: any("forked s-" in n.message for n in app._notifications), "the note")
        for note in app._notifications:  # plain text, no control (the toast shows it as it is)
            assert not note.markup and not FORBIDDEN.search(note.message + note.title), note


async def test_a_transcript_shows_stored_text_as_text(hostile_db: Path) -> None:
    app = _app(hostile_db, session=SESSION)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the session opened")
        await _until(pilot, lambda: len(app.screen.query(MessageView)) == 3, "its messages")
        await pilot.press("o")  # the tool calls unfolded too
        await pilot.pause(0.1)
        assert_harmless(app, "the transcript")
        shown = _screen(app)
        assert f"tool{MARKUP}" in shown  # a tool name holding markup, literal
        assert "pwned answer \\x1b]0;pwned" in shown


async def test_search_highlights_are_styled_spans(hostile_db: Path) -> None:
    app = _app(hostile_db)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _rows(app) == 3, "the sessions")
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        hits = app.screen.query_one("#hits", DataTable)
        app.screen.query_one("#query", Input).value = "login"
        await _until(pilot, lambda: hits.row_count == 1, "the login hit")
        cell = hits.get_row_at(0)[3]
        assert isinstance(cell, Text)
        assert cell.plain == "[Migration] Refactor the login handler"  # the word kept, no markup
        start = cell.plain.index("login")
        assert any(s.start == start and s.end == start + 5 and s.style for s in cell.spans)
        app.screen.query_one("#query", Input).value = "pwned"
        await _until(pilot, lambda: hits.row_count >= 2, "the hostile hits")
        await pilot.pause(0.1)
        assert_harmless(app, "the hits")
        app.screen.query_one("#query", Input).value = "[/] login"  # the query itself, shown back
        await pilot.pause(0.5)
        assert_harmless(app, "a query holding markup")
