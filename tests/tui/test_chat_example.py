"""examples/chat_tui.py with its offline echo model: piped lines (a real process) and the Textual
chat (Pilot); every turn lands in the database through AutoCompactStore, compaction included."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from textual.widgets import Input, Static

from axio_context_sqlite.database import SessionView, open_database

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat_tui.py"


async def _show(path: Path, session: str) -> SessionView:
    async with open_database(path) as database:
        return await database.show(session, full=True)


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chat_tui_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_piped_lines_are_answered_stored_and_compacted(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    lines = "".join(f"message number {i} with a few words\n" for i in range(6))
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(db), "--session", "c1", "--max-tokens", "40"],
        input=lines,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "(model: echo)" in done.stdout
    assert "assistant: echo: message number 5 with a few words" in done.stdout
    full = asyncio.run(_show(db, "c1"))
    assert len(full.messages) == 12  # nothing lost to compaction
    assert [m.role for m in full.messages[:2]] == ["user", "assistant"]
    assert full.header.checkpoints, "the token threshold compacted the chat"
    assert full.header.input_tokens > 0


async def test_the_textual_chat_answers_with_the_echo_model(tmp_path: Path) -> None:
    module = _example()
    args: argparse.Namespace = module.parse(["--db", str(tmp_path / "chat.db"), "--session", "tui-1"])
    app = module.chat_app(args)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):
            if app.chat is not None:
                break
            await pilot.pause(0.02)
        await pilot.click("#message")
        await pilot.press(*"hi there", "enter")
        for _ in range(200):
            shown = [str(w.render()) for w in app.query(Static)]
            if "assistant: echo: hi there" in shown:
                break
            await pilot.pause(0.02)
        assert "user: hi there" in shown and "assistant: echo: hi there" in shown
        assert app.query_one(Input).value == ""
    async with open_database(tmp_path / "chat.db") as database:
        view = await database.show("tui-1")
        assert [m.role for m in view.messages] == ["user", "assistant"]
