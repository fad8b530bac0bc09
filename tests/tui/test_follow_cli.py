"""``axio-context show --follow`` as a real process seeing another process's appends, ended by
Ctrl-C (SIGINT) cleanly, on a SQLite file and on PostgreSQL (``backend_db``); and ``browse``'s
one-line errors before it takes the terminal."""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

from axio_context import Message
from axio_context.testing import text
from tests.support.backends import Backend
from tests.support.cli_helpers import invoke, make_sessions
from tests.support.processes import take_ctrl_c

ROOT = Path(__file__).resolve().parents[2]

#: Appends one message to session ``s`` from its own process (a SQLite file or a URL).
APPENDER = """
import asyncio, sys
from axio_context.testing import text
from tests.support.backends import Backend
async def main():
    where = sys.argv[1]
    backend = Backend("postgres" if where.startswith("postgresql://") else "sqlite", where)
    async with backend.open():
        for word in sys.argv[2:]:  # one commit each
            await backend.store("s").append(text("assistant", word))
asyncio.run(main())
"""


def _append(where: str, *words: str) -> None:
    subprocess.run([sys.executable, "-c", APPENDER, where, *words], check=True, cwd=ROOT)


def _make(backend: Backend, messages: list[Message]) -> None:
    async def write() -> None:
        async with backend.open():
            await backend.store("s", project="/p").append_many(messages)

    asyncio.run(write())


def _console_script() -> str:
    return str(Path(sys.executable).with_name("axio-context"))


def _read_until(proc: subprocess.Popen[bytes], wanted: bytes, seen: bytearray) -> None:
    """Read the follower's stdout until ``wanted`` appears (bounded failsafe, not a timing check)."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        for _ in range(600):
            if wanted in seen:
                return
            if sel.select(0.1):
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
    raise AssertionError(f"{wanted!r} never printed; got {bytes(seen)!r}")


def test_show_follow_prints_another_processes_appends_and_stops_on_ctrl_c(backend_db: Backend) -> None:
    _make(backend_db, [text("user", f"old {i}") for i in range(12)])
    follower = subprocess.Popen(
        [
            _console_script(),
            "--db",
            backend_db.where,
            "show",
            "s",
            "--follow",
            "--interval",
            "0.05",
            "--last",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=take_ctrl_c,
    )
    seen = bytearray()
    try:
        _read_until(follower, b"old 11", seen)
        assert b"old 10" in seen and b"old 9" not in seen  # --last 2
        _append(backend_db.where, "first-one", "second-one")
        _read_until(follower, b"second-one", seen)
        assert seen.index(b"first-one") < seen.index(b"second-one")
        assert b"## 12 \xc2\xb7 assistant" in seen and b"## 13 \xc2\xb7 assistant" in seen
        follower.send_signal(signal.SIGINT)
        _, err = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 0, err
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err


def test_show_follow_json_prints_one_message_a_line(backend_db: Backend) -> None:
    _make(backend_db, [text("user", "hello")])
    follower = subprocess.Popen(
        [
            _console_script(),
            "--db",
            backend_db.where,
            "show",
            "--follow",
            "--json",
            "--interval",
            "0.05",
            "s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=take_ctrl_c,
    )
    seen = bytearray()
    try:
        _read_until(follower, b"hello", seen)
        _append(backend_db.where, "world")
        _read_until(follower, b"world", seen)
        follower.send_signal(signal.SIGINT)
        follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    lines = [json.loads(line) for line in bytes(seen).decode().splitlines() if line.strip()]
    assert [(m["position"], m["role"]) for m in lines] == [(0, "user"), (1, "assistant")]
    assert lines[1]["content"] == [{"type": "text", "text": "world"}]


def test_show_follow_of_a_missing_session_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    invoke("--db", db, "title", "--help")  # nothing created by help
    result = invoke("--db", db, "show", "--follow", "nope", ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.count("\n") == 1 and "no database at" in result.output


def test_show_follow_on_a_server_that_is_down_is_one_line() -> None:
    result = invoke("--db", "postgresql://nobody@127.0.0.1:1/x", "show", "--follow", "s", ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.count("\n") == 1 and "cannot reach" in result.output


def test_browse_refuses_a_missing_file_and_a_server_that_is_down_in_one_line(
    tmp_path: Path, db_path: Path
) -> None:
    missing = invoke("--db", tmp_path / "missing.db", "browse", ok=False)
    assert missing.exit_code == 1 and missing.output.startswith("Error: no database at")
    # browse opens PostgreSQL too (tests/tui/test_postgres.py); one that is down is one line
    server = invoke("--db", "postgresql://nobody@127.0.0.1:1/x", "browse", ok=False)
    assert server.exit_code == 1 and server.output.count("\n") == 1 and "cannot reach" in server.output
    make_sessions(db_path, {"s": [text("user", "hello")]})
    piped = invoke("--db", db_path, "browse", ok=False)  # CliRunner's streams are no terminal
    assert piped.exit_code == 1 and "run it on a terminal" in piped.output
    follow_unknown = invoke("--db", db_path, "show", "--follow", "zzz", ok=False)
    assert follow_unknown.exit_code == 1 and "no session id starts with 'zzz'" in follow_unknown.output
