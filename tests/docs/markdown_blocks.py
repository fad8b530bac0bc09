"""Read the fenced code blocks of the Markdown docs, and run them as a reader would.

A doc runs in a fresh folder with its own user data directory (so the default database is a
fresh file there) and no ``$AXIO_CONTEXT_DB``: every ``python`` block runs as a script, in order,
and every ``console``/``bash`` block whose first command is ``axio-context`` runs its commands
through bash against the database the blocks before it prepared. In a ``console`` block a
``$ `` line is a command and the lines up to the next one are its expected output (stdout and
stderr together; ``...`` stands for any text, as in doctest); a command whose output starts with
``Error:`` must exit 1, any other must exit 0.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its text and the line it starts on."""

    lang: str
    text: str
    line: int


@dataclass(frozen=True)
class Command:
    """One shell command of a block and the output the doc shows for it."""

    line: str
    expected: str


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]


def commands(block: Block) -> list[Command]:
    """The commands of a ``console`` (``$ `` prompts, output below) or ``bash`` block."""
    if block.lang == "bash":
        lines = [ln.split("  #")[0].strip() for ln in block.text.splitlines()]
        return [Command(ln, "") for ln in lines if ln and not ln.startswith("#")]
    found: list[Command] = []
    current: str | None = None
    output: list[str] = []
    for ln in block.text.splitlines():
        if ln.startswith("$ "):
            if current is not None:
                found.append(Command(current, "\n".join(output)))
            current, output = ln[2:], []
        else:
            output.append(ln)
    if current is not None:
        found.append(Command(current, "\n".join(output)))
    return found


def runs_cli(block: Block) -> bool:
    """Whether a block is a command-line example to run (its first command is ``axio-context``)."""
    if block.lang not in ("console", "bash"):
        return False
    cmds = commands(block)
    return bool(cmds) and cmds[0].line.startswith("axio-context")


def environment(home: Path) -> dict[str, str]:
    """A reader's environment inside ``home``: its own data directory, no ``$AXIO_CONTEXT_DB``,
    and this interpreter's scripts (``axio-context``) first on the PATH."""
    env = {k: v for k, v in os.environ.items() if k != "AXIO_CONTEXT_DB" and not k.startswith("XDG_")}
    env["XDG_DATA_HOME"] = str(home / "data")
    env["XDG_CONFIG_HOME"] = str(home / "config")
    env["XDG_CACHE_HOME"] = str(home / "cache")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env["COLUMNS"] = "200"
    return env


_CHECKER = doctest.OutputChecker()
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def run_python(block: Block, where: str, home: Path) -> None:
    """Run a ``python`` block as a script; it must exit 0."""
    script = home / f"block_{block.line}.py"
    script.write_text(block.text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=home, env=environment(home), capture_output=True, text=True
    )
    assert done.returncode == 0, f"{where}:{block.line}: the python block failed:\n{done.stderr}"


def run_command(cmd: Command, where: str, home: Path) -> None:
    """Run one shell command; its output must match what the doc shows, and its exit code too."""
    done = subprocess.run(
        ["bash", "-c", cmd.line],
        cwd=home,
        env=environment(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    got = done.stdout
    failing = cmd.expected.lstrip().startswith("Error:")
    assert done.returncode == (1 if failing else 0), f"{where}: `{cmd.line}` exited {done.returncode}:\n{got}"
    want = cmd.expected.strip() + "\n" if cmd.expected.strip() else ""
    if want:
        assert _CHECKER.check_output(want, got, _FLAGS), (
            f"{where}: `{cmd.line}` printed:\n{got}\nthe doc shows:\n{want}"
        )


def run_doc(path: Path, home: Path) -> int:
    """Run every runnable block of one doc in order; returns how many ran."""
    ran = 0
    for block in blocks(path):
        where = f"{path.relative_to(ROOT)}:{block.line}"
        if block.lang == "python":
            run_python(block, where, home)
            ran += 1
        elif runs_cli(block):
            for cmd in commands(block):
                run_command(cmd, where, home)
            ran += 1
    return ran
