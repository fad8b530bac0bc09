"""Read the fenced code blocks of the Markdown docs, and run each one alone, as a reader would.

Every block runs in a fresh folder with its own user data directory (so the default database is
a fresh file there) and no ``$AXIO_CONTEXT_DB``; nothing a block before it made is there. A
``python`` block runs as a script and must exit 0. In a ``console`` block a ``$ `` line is a
command and the lines up to the next one are its expected output (stdout and stderr together;
``...`` stands for any text, as in doctest); a command whose output has a line starting with
``Error:`` must exit 1, any other must exit 0. A ``bash`` block's lines are commands whose output
is not shown. Commands run through bash with this interpreter's scripts (``axio-context``,
``python``) first on the PATH.

The fence's info string may carry, after the language, words that say how the block runs:

- ``name=NAME`` names the block; ``after=NAME`` (or ``after=A,B``) runs the blocks of those names
  first, in the same fresh folder: a command-line session over the data an example wrote says
  which example, and the test runs that example again before it;
- ``postgres`` gives the block a fresh database on the tests' PostgreSQL server: the URL
  :data:`PG_PLACEHOLDER` in the block stands for it (in the commands and the code), and the
  server's real URL in what a command prints is shown as the placeholder again.

A block whose every command is ``pip install`` is not run (the registry is slow and the tests
run inside the install): the extras it names must exist in ``pyproject.toml``. A ``json`` block
(a configuration another program reads) is not run either: it must parse. Any other block
(``text``, a command this machine cannot run) fails :func:`handling`.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The PostgreSQL URL the docs show; a ``postgres`` block runs against a real database in its place.
PG_PLACEHOLDER = "postgresql://me@db.example/agents"

_FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: First words of a command the docs test runs.
_RUNNABLE = ("axio-context", "python")
_ENV_WORD = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its text, the line it starts on and its fence words."""

    lang: str
    text: str
    line: int
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Command:
    """One shell command of a block and the output the doc shows for it."""

    line: str
    expected: str


def _attrs(info: str) -> dict[str, str]:
    words = info.split()
    return {w.partition("=")[0]: w.partition("=")[2] for w in words}


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    return [
        Block(m.group(1), m.group(3), text.count("\n", 0, m.start()) + 1, _attrs(m.group(2)))
        for m in _FENCE.finditer(text)
    ]


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


def program(line: str) -> str:
    """The program a command line starts (after any ``NAME=value`` settings)."""
    words = line.split()
    while words and _ENV_WORD.match(words[0]):
        words.pop(0)
    return words[0] if words else ""


def runs_cli(block: Block) -> bool:
    """Whether a block is a command-line example to run (every command one the test can run)."""
    if block.lang not in ("console", "bash"):
        return False
    cmds = commands(block)
    return bool(cmds) and all(program(c.line) in _RUNNABLE for c in cmds)


def installs(block: Block) -> bool:
    """Whether a block is a ``bash``/``console`` block of ``pip install`` commands only."""
    cmds = commands(block) if block.lang in ("console", "bash") else []
    return bool(cmds) and all(c.line.startswith("pip install ") for c in cmds)


def handling(block: Block) -> str:
    """How the docs test takes a block: ``run``, ``install`` (extras checked), ``parse`` (a
    ``json`` block, such as an MCP client's configuration: it must be valid JSON) or
    ``unhandled``."""
    if block.lang == "python" or runs_cli(block):
        return "run"
    if block.lang == "json":
        return "parse"
    if installs(block):
        return "install"
    return "unhandled"


def extras_named(block: Block) -> list[str]:
    """The extras a ``pip install`` block names (``'.[a,b]'``, ``'axio-context[a]'``)."""
    found: list[str] = []
    for group in re.findall(r"(?:\.|axio-context)\[([\w,-]+)\]", block.text):
        found += group.split(",")
    return found


def declared_extras() -> set[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(data["project"]["optional-dependencies"])


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


@dataclass(frozen=True)
class Place:
    """Where a block runs: its folder, and the PostgreSQL URL standing for the placeholder."""

    home: Path
    pg_url: str | None = None

    def into(self, text: str) -> str:
        return text.replace(PG_PLACEHOLDER, self.pg_url) if self.pg_url else text

    def back(self, text: str) -> str:
        if not self.pg_url:
            return text
        from axio_context_postgres.connection import redacted

        for shown in sorted({self.pg_url, redacted(self.pg_url)}, key=len, reverse=True):
            text = text.replace(shown, PG_PLACEHOLDER)
        return text


def run_python(block: Block, where: str, place: Place) -> None:
    """Run a ``python`` block as a script; it must exit 0."""
    script = place.home / f"block_{block.line}.py"
    script.write_text(place.into(block.text), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=place.home,
        env=environment(place.home),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"{where}: the python block failed:\n{done.stderr}"


def run_command(cmd: Command, where: str, place: Place) -> None:
    """Run one shell command; its output must match what the doc shows, and its exit code too."""
    done = subprocess.run(
        ["bash", "-c", place.into(cmd.line)],
        cwd=place.home,
        env=environment(place.home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    got = place.back(done.stdout)
    failing = any(ln.startswith("Error:") for ln in cmd.expected.splitlines())
    assert done.returncode == (1 if failing else 0), f"{where}: `{cmd.line}` exited {done.returncode}:\n{got}"
    want = cmd.expected.strip() + "\n" if cmd.expected.strip() else ""
    if want:
        assert _CHECKER.check_output(want, got, _FLAGS), (
            f"{where}: `{cmd.line}` printed:\n{got}\nthe doc shows:\n{want}"
        )


def chain(path: Path, block: Block) -> list[Block]:
    """The blocks to run for ``block``, alone: the ones it names with ``after=`` (a name, or
    names joined by commas, each run after the blocks it names in turn), then itself."""
    named = {b.attrs["name"]: b for b in blocks(path) if b.attrs.get("name")}
    order: list[Block] = []

    def visit(current: Block, seen: tuple[int, ...]) -> None:
        if current.line in seen:
            raise AssertionError(f"{path.name}:{block.line}: blocks name each other in a circle")
        for before in filter(None, current.attrs.get("after", "").split(",")):
            if before not in named:
                raise AssertionError(f"{path.name}:{current.line}: after={before} names no block")
            visit(named[before], (*seen, current.line))
        if current not in order:
            order.append(current)

    visit(block, ())
    return order


def needs_postgres(path: Path, block: Block) -> bool:
    return any("postgres" in b.attrs for b in chain(path, block))


def run_block(path: Path, block: Block, home: Path, pg_url: Callable[[], str] | None = None) -> None:
    """Run ``block`` alone in ``home`` (a fresh folder), after the blocks it names."""
    place = Place(home, pg_url() if pg_url is not None and needs_postgres(path, block) else None)
    for b in chain(path, block):
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{b.line}"
        if b.lang == "python":
            run_python(b, where, place)
        else:
            for cmd in commands(b):
                run_command(cmd, where, place)
