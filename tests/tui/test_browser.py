"""The terminal browser driven headless by Textual's Pilot: keys, clicks, what the screen shows,
against a real database file (and a second real connection, or process, writing to it), and the
same against a real PostgreSQL database (``backend_db``) where nothing is SQLite's own."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Collapsible, DataTable, Input, Static

from axio_context import Checkpoint, ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.testing import text
from axio_context_sqlite import Connection
from axio_context_sqlite.tui import BrowserApp
from axio_context_sqlite.tui.core import open_browsable
from axio_context_sqlite.tui.dialogs import AskScreen, ConfirmScreen
from axio_context_sqlite.tui.search import SearchScreen
from axio_context_sqlite.tui.sessions import SessionsScreen
from axio_context_sqlite.tui.transcript import MessageView, TranscriptScreen
from tests.support.backends import Backend
from tests.support.lock_holder import holding_lock

SIZE = (140, 50)


async def _db(backend: Backend) -> None:
    async with backend.open():
        old = backend.store("s", project="/work/alpha")
        await old.append(text("user", "the oldest session"))
        chat = backend.store("chat", project="/work/alpha")
        await chat.append_many(
            [
                Message(
                    role="user",
                    content=[TextBlock(text="look at this"), ImageBlock("image/png", b"\x89PNG" * 3000)],
                ),
                Message(
                    role="assistant",
                    content=[ToolUseBlock(id="c1", name="read_file", input={"path": "zebra.txt"})],
                ),
                Message(
                    role="user",
                    content=[ToolResultBlock(tool_use_id="c1", content="stripes all the way down")],
                ),
                text("assistant", "it is about zebras"),
            ]
        )
        await chat.add_checkpoint(
            Checkpoint(position=2, summary=[text("user", "earlier: an image and a read")])
        )
        fork = await chat.fork()
        await fork.append(text("user", "a question on the fork"))
        other = backend.store("beta-1", project="/work/beta")
        await other.append(text("user", "nothing about that animal"))


def _app(path: str | Path, **kw: object) -> BrowserApp:
    return BrowserApp(path, poll_interval=0.05, retry_interval=0.05, **kw)  # type: ignore[arg-type]


def _texts(screen: object) -> str:
    return "\n".join(str(w.render()) for w in screen.query(Static))  # type: ignore[attr-defined]


async def _until(pilot: object, check: object, what: str) -> None:
    """Let the app run until ``check()`` holds (a failsafe bound, not a timing assertion)."""
    for _ in range(400):
        if check():  # type: ignore[operator]
            return
        await pilot.pause(0.02)  # type: ignore[attr-defined]
    raise AssertionError(f"never happened: {what}")


def _table(app: BrowserApp) -> DataTable[object]:
    return app.screen.query_one("#sessions", DataTable)


async def test_the_list_is_newest_first_with_forks_under_their_parent(backend_db: Backend) -> None:
    await _db(backend_db)
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await _until(pilot, lambda: _table(app).row_count == 4, "four rows")
        table = _table(app)
        keys = [r.key.value for r in table.ordered_rows]
        assert keys[0] == "beta-1" and keys[1] == "chat" and keys[3] == "s"
        fork_label = str(table.get_row_at(2)[0])
        assert fork_label.startswith("└ ")  # the fork sits under its parent, indented
        # filter by text: typed into the filter line, the list narrows (flat)
        await pilot.press("t", *"zebra")
        await _until(pilot, lambda: _table(app).row_count == 0, "no session titled zebra")
        app.screen.query_one("#text", Input).value = "oldest"
        await _until(pilot, lambda: [r.key.value for r in _table(app).ordered_rows] == ["s"], "one match")
        # filter by project instead (a path, as --project takes it)
        app.screen.query_one("#text", Input).value = ""
        app.screen.query_one("#project", Input).value = "/work/beta"
        await _until(
            pilot, lambda: [r.key.value for r in _table(app).ordered_rows] == ["beta-1"], "beta only"
        )


async def test_pages_are_read_as_the_cursor_nears_the_end(backend_db: Backend) -> None:
    async with backend_db.open():
        for i in range(60):
            await backend_db.store(f"s{i:03}", project="p").append(text("user", f"n{i}"))
    app = _app(backend_db.where, page_size=20)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _table(app).row_count == 20, "the first page")
        screen = app.screen
        assert isinstance(screen, SessionsScreen) and screen.next_cursor is not None
        await pilot.press("ctrl+end")
        await _until(pilot, lambda: _table(app).row_count == 40, "the second page")
        await pilot.press("ctrl+end")
        await _until(pilot, lambda: _table(app).row_count == 60, "the last page")
        assert screen.next_cursor is None
        assert "60 sessions shown" in _texts(screen)


async def test_a_transcript_shows_roles_folded_tools_images_and_checkpoints(backend_db: Backend) -> None:
    await _db(backend_db)
    app = _app(backend_db.where, session="chat")
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the session opened")
        await _until(pilot, lambda: bool(app.screen.query(MessageView)), "messages")
        # the view is mounted in steps: wait for its last message before reading the screen
        await _until(
            pilot,
            lambda: all(t in _texts(app.screen) for t in ("#3 · assistant", "earlier: an image and a read")),
            "the whole view",
        )
        shown = _texts(app.screen)
        # the model's view: the checkpoint marked, its summary, then positions 2 and 3
        assert "compaction checkpoint 1: messages 0-1 summarised" in shown
        assert "earlier: an image and a read" in shown
        assert "#2 · user" in shown and "#3 · assistant" in shown and "#0 · user" not in shown
        folds = list(app.screen.query(Collapsible))
        assert folds and all(c.collapsed for c in folds)
        assert "tool result for c1: stripes all the way down" in folds[0].title
        await pilot.press("v")  # every message: the image as one line, the tool call folded
        await _until(
            pilot,
            lambda: all(t in _texts(app.screen) for t in ("#0 · user", "[image image/png", "#3 · assistant")),
            "the full view",
        )
        shown = _texts(app.screen)
        assert "[image image/png, 12.0 KB]" in shown and "PNG" not in shown
        assert any("tool call read_file (c1)" in c.title for c in app.screen.query(Collapsible))
        assert (
            shown.index("#1 · assistant") < shown.index("compaction checkpoint 1") < shown.index("#2 · user")
        )
        await pilot.press("o")  # unfold every tool call
        assert not any(c.collapsed for c in app.screen.query(Collapsible))
        await pilot.press("escape")
        assert isinstance(app.screen, SessionsScreen)


async def test_search_as_you_type_jumps_to_the_message(backend_db: Backend) -> None:
    await _db(backend_db)
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _table(app).row_count == 4, "the list")
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"stripes")
        hits = app.screen.query_one("#hits", DataTable)
        await _until(
            pilot, lambda: hits.row_count >= 1 and "hits for 'stripes'" in _texts(app.screen), "a hit"
        )
        await pilot.press("down", "enter")
        await _until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the hit's session")
        await _until(pilot, lambda: bool(app.screen.query(".target")), "the message marked")
        target = app.screen.query_one(".target", MessageView)
        assert target.position == 2 and target.id == "m-2"
        await pilot.press("escape")
        assert isinstance(app.screen, SearchScreen)
        await pilot.click("#query")
        app.screen.query_one("#query", Input).value = "qqqzzz"
        await _until(pilot, lambda: "no match" in _texts(app.screen), "no hits for a word no message holds")
        assert hits.row_count == 0
        # a hit the model's view summarised away opens the session with every message
        app.screen.query_one("#query", Input).value = "look"
        await _until(pilot, lambda: hits.row_count == 1, "the hit at position 0")
        hits.focus()
        await pilot.press("enter")
        await _until(pilot, lambda: bool(app.screen.query(".target")), "the summarised message marked")
        assert app.screen.query_one(".target", MessageView).position == 0
        assert isinstance(app.screen, TranscriptScreen) and app.screen.full


async def test_fork_rename_delete_with_confirmation_and_export(backend_db: Backend, tmp_path: Path) -> None:
    await _db(backend_db)
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _table(app).row_count == 4, "the list")
        table = _table(app)
        table.move_cursor(row=[r.key.value for r in table.ordered_rows].index("s"))
        await pilot.press("f")  # fork "s"
        await _until(pilot, lambda: _table(app).row_count == 5, "the fork listed")
        await pilot.press("r")  # rename the fork the cursor moved to
        await _until(pilot, lambda: isinstance(app.screen, AskScreen), "the rename question")
        answer = app.screen.query_one(Input)
        answer.value = "renamed-fork"
        await pilot.press("enter")
        await _until(pilot, lambda: "renamed-fork" in _table(app).rows, "the new id listed")
        await pilot.press("d")  # delete it: "n" keeps it
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("n")
        await pilot.pause(0.1)
        assert "renamed-fork" in _table(app).rows
        await pilot.press("d")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question again")
        await pilot.click("#yes")
        await _until(pilot, lambda: "renamed-fork" not in _table(app).rows, "the fork deleted")
        table = _table(app)
        table.move_cursor(row=[r.key.value for r in table.ordered_rows].index("chat"))
        await pilot.press("e")
        await _until(pilot, lambda: isinstance(app.screen, AskScreen), "the export question")
        dest = tmp_path / "out" / "chat.json"
        app.screen.query_one(Input).value = str(dest)
        await pilot.press("enter")
        await _until(pilot, dest.exists, "the export written")
    exported = json.loads(dest.read_text())
    assert [s["id"] for s in exported["sessions"]] == ["chat"]
    async with open_browsable(backend_db.where, busy_timeout=5.0) as db:
        ids = {r.info.session_id for r in (await db.session_tree()).rows}
    assert ids == {"s", "chat", "beta-1"} | {i for i in ids if i not in {"s", "chat", "beta-1"}}
    assert "renamed-fork" not in ids and len(ids) == 4


async def test_an_open_session_shows_what_another_connection_appends(backend_db: Backend) -> None:
    await _db(backend_db)
    app = _app(backend_db.where, session="s")
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: bool(app.screen.query(MessageView)), "the transcript")
        async with backend_db.open():
            await backend_db.store("s").append(text("assistant", "written elsewhere"))
        await _until(pilot, lambda: "written elsewhere" in _texts(app.screen), "the new message")
        assert "#1 · assistant" in _texts(app.screen)
        await pilot.press("escape")  # the list saw it too: two messages now
        await _until(pilot, lambda: "2" in [str(c) for c in _table(app).get_row("s")], "the new count")


async def test_a_locked_database_is_said_and_retried(db_path: Path) -> None:
    await _db(Backend("sqlite", str(db_path)))
    app = _app(db_path, busy_timeout=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _table(app).row_count == 4, "the list")
        table = _table(app)
        with holding_lock(db_path) as holder:
            table.move_cursor(row=[r.key.value for r in table.ordered_rows].index("s"))
            await pilot.press("r")
            await _until(pilot, lambda: isinstance(app.screen, AskScreen), "the rename question")
            app.screen.query_one(Input).value = "s-renamed"
            await pilot.press("enter")
            await _until(pilot, lambda: "locked by another process" in app.sub_title, "the lock said")
            assert app.locked
            holder.release()
            holder.wait_released()
            await _until(pilot, lambda: "s-renamed" in _table(app).rows, "the rename done after the lock")
        assert not app.locked and "locked by another process" not in app.sub_title


async def test_a_missing_database_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    app = _app(tmp_path / "missing.db")
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: "cannot open" in app.sub_title, "the error")
        assert "no database at" in app.sub_title
        await pilot.press("q")


async def test_the_list_filters_by_agent(backend_db: Backend) -> None:
    """``a`` filters to the sessions holding an agent's conversations (the runtime layer's)."""
    from axio_context_postgres.agents import PostgresHistoryProvider
    from axio_context_sqlite.agents import SQLiteHistoryProvider

    await _db(backend_db)
    async with backend_db.open() as handle:
        provider = (
            SQLiteHistoryProvider(handle)
            if isinstance(handle, Connection)
            else PostgresHistoryProvider(handle)
        )
        await provider.append("support", text("user", "invoice"), session_id="ticket-1")
        await provider.append("billing", text("user", "refund"), session_id="ticket-1")
        support = await provider.session_key("support", "ticket-1")
    app = _app(backend_db.where)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: _table(app).row_count == 6, "six rows")
        await pilot.press("a", *"support")
        await _until(
            pilot, lambda: [r.key.value for r in _table(app).ordered_rows] == [support], "support only"
        )
        app.screen.query_one("#agent", Input).value = "nobody"
        await _until(pilot, lambda: _table(app).row_count == 0, "no such agent")
