"""Stored text never reaches a terminal as control: every command that prints stored fields, run
as a real ``axio-context`` process on a real pty, over a database whose every field is hostile
(tests/support/hostile.py). Nothing the terminal would act on arrives (no ESC, BEL, lone CR,
C1 or bidi control), markup stays literal, and nothing prints a traceback."""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from tests.support.hostile import BLOB, COLLECTION, FORBIDDEN, HOSTILE, fill

EXE = shutil.which("axio-context")


def on_pty(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``axio-context ARGS`` with stdin, stdout and stderr on a fresh pty (200 x 100);
    returns its exit code and everything the terminal received, decoded (``\\r\\n`` as ``\\n``)."""
    assert EXE is not None
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 100, 200, 0, 0))
    environ = {**os.environ, "TERM": "xterm-256color", "PAGER": "cat", "NO_COLOR": "1", **(env or {})}
    proc = subprocess.Popen(
        [EXE, *args], stdin=slave, stdout=slave, stderr=slave, env=environ, close_fds=True
    )
    os.close(slave)
    received = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError as exc:  # EIO: the process closed the terminal's other end
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    code = proc.wait(timeout=60)
    return code, received.decode("utf-8", "replace").replace("\r\n", "\n")


def assert_harmless(out: str, what: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(out)})
    assert not found, f"{what}: the terminal received {found}:\n{out}"
    assert "Traceback" not in out, f"{what}:\n{out}"


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("hostile") / "context.db"
    return path, asyncio.run(fill(path))


#: Each command that prints stored fields, by name, with the ids it takes (filled in below).
COMMANDS = {
    "list-sessions": ["list-sessions"],
    "list-sessions --tree": ["list-sessions", "--tree"],
    "list-sessions --json": ["list-sessions", "--json"],
    "list-sessions --nl": ["list-sessions", "--nl"],
    "show": ["show", "{session}", "--no-pager"],
    "show --full --json": ["show", "{session}", "--json", "--full"],
    "title": ["title", "{session}"],
    "search": ["search", "pwned", "--mode", "keyword"],
    "search --json": ["search", "pwned", "--mode", "keyword", "--json"],
    "stats": ["stats"],
    "state": ["state", "{session}"],
    "usage by model": ["usage", "--by", "model"],
    "usage by agent": ["usage", "--by", "agent"],
    "usage by project": ["usage", "--by", "project"],
    "export markdown": ["export", "{session}", "-f", "markdown"],
    "export json": ["export", "{session}"],
    "export jsonl": ["export", "--all", "-f", "jsonl"],
    "graph": ["graph"],
    "graph entities": ["graph", "entities"],
    "graph show": ["graph", "show", "{entity}"],
    "graph show --json": ["graph", "show", "{entity}", "--json"],
    "tasks": ["tasks"],
    "tasks show": ["tasks", "show", "{board}"],
    "pools": ["pools"],
    "pools show": ["pools", "show", "{pool}"],
    "pools show branch": ["pools", "show", "{branch}"],
    "blobs": ["blobs"],
    "blobs show": ["blobs", "show", BLOB],
    "collections": ["collections"],
    "collections show": ["collections", "show", COLLECTION],
    "check": ["check"],
    "missing session": ["show", f"nothing-{HOSTILE}"],
    "missing entity": ["graph", "show", f"nothing-{HOSTILE}"],
    "missing board": ["tasks", "show", f"nothing-{HOSTILE}"],
    "missing pool": ["pools", "show", f"nothing-{HOSTILE}"],
    "missing blob": ["blobs", "show", f"nothing-{HOSTILE}"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_control_from_stored_text_reaches_the_terminal(
    hostile_db: tuple[Path, dict[str, str]], name: str
) -> None:
    path, ids = hostile_db
    args = [a.format(**ids) if a.startswith("{") else a for a in COMMANDS[name]]
    code, out = on_pty("--db", str(path), *args)
    assert_harmless(out, name)
    if name.startswith("missing"):
        assert code == 1 and out.startswith("Error: ") and out.count("\n") == 1, out
    else:
        assert code == 0, out
        assert "pwned" in out or "exe.txt" in out or "click me" in out or name in ("check", "collections"), (
            out
        )


def test_search_highlights_are_the_only_styling(hostile_db: tuple[Path, dict[str, str]]) -> None:
    path, _ = hostile_db
    code, out = on_pty("--db", str(path), "search", "pwned", "--mode", "keyword", env={"NO_COLOR": ""})
    assert code == 0
    ours = re.sub(r"\x1b\[(?:0|1|33|39|22)(?:;\d+)*m", "", out)  # click.style's bold yellow and resets
    assert_harmless(ours, "search in colour")
    assert "\x1b[" in out  # the highlight is there


def test_browse_sends_no_stored_sequence_to_the_terminal(hostile_db: tuple[Path, dict[str, str]]) -> None:
    # The browser draws with escape sequences of its own, so what is checked is that none of the
    # stored ones arrive: the OSC that retitles the window, OSC 52 (the clipboard), the clear, a
    # raw C1 CSI or bidi override, a hyperlink (OSC 8) to the stored URL.
    path, _ = hostile_db
    assert EXE is not None
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    environ = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [EXE, "--db", str(path), "browse"], stdin=slave, stdout=slave, stderr=slave, env=environ
    )
    os.close(slave)
    received = bytearray()
    deadline = time.monotonic() + 30
    sent_quit = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            received += chunk
        if not sent_quit and b"exe.txt" in received:  # the list is drawn: leave
            time.sleep(0.5)
            os.write(master, b"\x11")  # ctrl+q
            sent_quit = True
    os.close(master)
    code = proc.wait(timeout=30)
    out = received.decode("utf-8", "replace")
    assert sent_quit, out[-2000:]
    assert code == 0
    for seq in (
        "\x1b]0;pwned",
        "\x1b]52;",
        "\x1b[2J\x1b]52",
        "\x9b",
        "\u202e",
        "\u2066",
        "attacker.invalid/x\x1b",
    ):
        assert seq not in out, repr(seq)
    assert "\\x1b]0;pwned" in out  # shown, escaped
    assert "Traceback" not in out and "MarkupError" not in out
