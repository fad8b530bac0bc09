"""The browser's keys a new user tried (issue 31), driven headless by Textual's Pilot against a real
SQLite file and a real PostgreSQL database (``backend_db``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from axio_context.testing import text
from axio_context_sqlite.tui import BrowserApp
from axio_context_sqlite.tui.sessions import SessionsScreen
from axio_context_sqlite.tui.transcript import TranscriptScreen
from tests.support.backends import Backend

SIZE = (140, 50)


def _app(where: str | Path, **kw: object) -> BrowserApp:
    return BrowserApp(where, poll_interval=0.05, retry_interval=0.05, **kw)  # type: ignore[arg-type]


async def _until(pilot: Pilot[None], check: Callable[[], bool], what: str) -> None:
    """Let the app run until ``check()`` holds (a failsafe bound, not a timing assertion)."""
    for _ in range(500):
        if check():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"never happened: {what}")


def _table(app: BrowserApp) -> DataTable[object]:
    return app.screen.query_one("#sessions", DataTable)


def _texts(app: BrowserApp) -> str:
    return "\n".join(str(w.render()) for w in app.screen.query(Static))


async def _two(backend: Backend) -> None:
    async with backend.open():
        await backend.store("one", project="p").append(text("user", "a single message"))
        await backend.store("two", project="p").append_many([text("user", "hi"), text("assistant", "hello")])


async def test_q_quits_from_a_transcript(backend_db: Backend) -> None:
    await _two(backend_db)
    app = _app(backend_db.where, session="one")
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the transcript")
        await pilot.press("q")
        await _until(pilot, lambda: not app.is_running, "the app quit")


async def test_a_transcript_header_counts_one_message_in_the_singular(backend_db: Backend) -> None:
    await _two(backend_db)
    app = _app(backend_db.where, session="one")
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: "a single message" in _texts(app), "the message")
        assert "1 message " in _texts(app) and "1 messages" not in _texts(app)
    app = _app(backend_db.where, session="two")
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: "hello" in _texts(app), "the messages")
        assert "2 messages" in _texts(app)


async def test_typing_in_the_filter_types_and_enter_goes_to_the_list(backend_db: Backend) -> None:
    await _two(backend_db)
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _table(app).row_count == 2, "two rows")
        await pilot.press("t", *"pqfrdea/")
        box = app.screen.query_one("#text", Input)
        assert box.value == "pqfrdea/" and app.focused is box
        assert isinstance(app.screen, SessionsScreen) and app.is_running
        box.value = ""
        await pilot.press("o", "n", "e")
        await _until(pilot, lambda: [r.key.value for r in _table(app).ordered_rows] == ["one"], "one match")
        await pilot.press("enter")
        assert app.focused is _table(app) and isinstance(app.screen, SessionsScreen)
        await pilot.press("enter")  # now Enter opens the session under the cursor
        await _until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the transcript")


async def test_end_goes_to_the_last_session_of_a_long_list(backend_db: Backend) -> None:
    async with backend_db.open():
        for i in range(3_000):
            await backend_db.store(f"s{i:04}", project="p").append(text("user", f"n{i}"))
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _table(app).row_count > 0, "the first page")
        assert _table(app).row_count < 3_000
        started = time.monotonic()
        await pilot.press("end")
        await _until(pilot, lambda: _table(app).row_count == 3_000, "every session")
        table = _table(app)
        await _until(pilot, lambda: table.cursor_row == 2_999, "the cursor on the last row")
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == "s0000"
        assert time.monotonic() - started < 60
        await pilot.press("home")
        await _until(pilot, lambda: table.cursor_row == 0, "the cursor on the first row")


async def test_a_transcript_header_does_not_count_what_a_cleared_run_hid(backend_db: Backend) -> None:
    async with backend_db.open():
        if backend_db.name == "sqlite":
            from axio_context_sqlite.agents import SQLiteHistoryProvider as Provider
        else:
            from axio_context_postgres.agents import PostgresHistoryProvider as Provider
        provider = Provider(backend_db.handle, project="p")
        await provider.append_many(
            "a", [text("user", "hidden one"), text("assistant", "hidden two")], session_id="t", run_id="r"
        )
        await provider.append("a", text("user", "kept"), session_id="t", run_id="k")
        await provider.clear_run("a", session_id="t", run_id="r")
        name = str(await provider.session_key("a", "t"))
    app = _app(backend_db.where, session=name)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: "kept" in _texts(app), "the kept message")
        assert "1 message " in _texts(app) and "hidden one" not in _texts(app)  # 3 before
