"""Rough edges of the command line: completion after an option, show --last and its pager,
open-ended ranges in --help, suggestions for a mistyped command, and no traceback ever."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from axio_context.testing import text
from axio_context_sqlite.cli import cli
from tests.cli.test_process import console_script  # noqa: F401 (a fixture)
from tests.support.cli_helpers import invoke, invoke_json, make_sessions

# --- completion -------------------------------------------------------------------------------------


def _complete(words: str, db: Path) -> tuple[int, str]:
    """What bash completion prints for ``words`` (the last one the word being typed)."""
    env = {
        "_AXIO_CONTEXT_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        "AXIO_CONTEXT_DB": str(db),
    }
    result = CliRunner().invoke(cli, [], prog_name="axio-context", env=env, catch_exceptions=False)
    return result.exit_code, result.output.strip()


@pytest.fixture
def two_sessions(tmp_path: Path) -> Path:
    db = tmp_path / "c.db"
    make_sessions(db, {"alpha-one": [text("user", "a")], "beta-two": [text("user", "b")]})
    return db


def test_completing_an_option_value_never_raises(two_sessions: Path) -> None:
    assert _complete("axio-context search --limit ", two_sessions) == (0, "")
    code, out = _complete("axio-context search --mode ", two_sessions)
    assert (code, out.split()) == (0, ["plain,hybrid", "plain,keyword", "plain,semantic"])
    code, out = _complete("axio-context search --session ", two_sessions)
    assert code == 0 and sorted(out.split()) == ["plain,alpha-one", "plain,beta-two"]
    code, out = _complete("axio-context search word -s al", two_sessions)
    assert (code, out.split()) == (0, ["plain,alpha-one"])
    code, out = _complete("axio-context list-sessions --limit ", two_sessions)
    assert (code, "Traceback" in out) == (0, False)


def test_completing_never_writes_or_creates_a_database(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    assert _complete("axio-context show ", empty) == (0, "")
    assert empty.stat().st_size == 0
    assert _complete("axio-context show ", tmp_path / "no" / "db.db") == (0, "")
    assert not (tmp_path / "no").exists()


def test_completion_in_a_real_process_prints_no_traceback(console_script: Path, two_sessions: Path) -> None:  # noqa: F811
    for words in ("axio-context search --limit ", "axio-context search --session "):
        env = {
            **os.environ,
            "_AXIO_CONTEXT_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": "3",
            "AXIO_CONTEXT_DB": str(two_sessions),
        }
        done = subprocess.run([console_script], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert sorted(done.stdout.split()) == ["plain,alpha-one", "plain,beta-two"]


# --- show --last and the pager ------------------------------------------------------------------------


def test_show_last_n_shows_only_the_tail(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    make_sessions(db, {"s": [text("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(6)]})
    doc = invoke_json("--db", db, "show", "s", "--last", "2", "--json")
    assert (doc["start"], [m["position"] for m in doc["messages"]]) == (4, [4, 5])
    assert invoke_json("--db", db, "show", "s", "--tail", "2", "--json") == doc
    assert len(invoke_json("--db", db, "show", "s", "--last", "99", "--json")["messages"]) == 6
    shown = invoke("--db", db, "show", "s", "--last", "1").stdout
    assert "## 5 · assistant" in shown and "message 5" in shown and "message 4" not in shown
    bad = invoke("--db", db, "show", "s", "--last", "0", ok=False)
    assert bad.exit_code == 2 and "'--last' / '--tail'" in bad.stderr


def _run_on_a_terminal(argv: list[str], env: dict[str, str]) -> str:
    """Run ``argv`` with a pseudo-terminal as stdin and stdout; returns what it showed there."""
    main, other = pty.openpty()
    proc = subprocess.Popen(argv, stdin=other, stdout=other, stderr=subprocess.PIPE, env=env)
    os.close(other)
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output within 60 s")
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return shown.decode()


def test_show_pages_long_output_only_on_a_terminal(console_script: Path, tmp_path: Path) -> None:  # noqa: F811
    db = tmp_path / "p.db"
    make_sessions(db, {"s": [text("user", f"line {i}") for i in range(40)]})
    paged = tmp_path / "paged.txt"
    env = {**os.environ, "PAGER": f"tee {paged}", "LINES": "20", "COLUMNS": "80", "TERM": "dumb"}
    shown = _run_on_a_terminal([str(console_script), "--db", str(db), "show", "s"], env)
    assert "line 39" in paged.read_text() and "line 39" in shown
    paged.unlink()
    _run_on_a_terminal([str(console_script), "--db", str(db), "show", "s", "--no-pager"], env)
    assert not paged.exists()
    short = _run_on_a_terminal([str(console_script), "--db", str(db), "show", "s", "--last", "2"], env)
    assert "line 39" in short and not paged.exists()  # shorter than the terminal: not paged
    piped = subprocess.run(
        [console_script, "--db", db, "show", "s"], env=env, capture_output=True, text=True, check=True
    )
    assert "line 39" in piped.stdout and not paged.exists()


# --- help ---------------------------------------------------------------------------------------------


def test_no_help_shows_a_technical_ceiling_as_a_range() -> None:
    for name in ["", *cli.commands]:
        shown = invoke(*([name] if name else []), "--help").stdout
        for bracket in re.findall(r"\[[^\]]*\]", shown):
            numbers = [int(n) for n in re.findall(r"\d+", bracket)]
            assert all(n <= 10**6 for n in numbers), (name, bracket)
    assert "[default: 50; x>=0]" in invoke("list-sessions", "--help").stdout


def test_a_count_past_the_ceiling_is_too_large_not_out_of_an_unseen_range() -> None:
    bad = invoke("list-sessions", "-n", str(2**70), ok=False)
    assert bad.exit_code == 2 and f"{2**70} is too large." in bad.stderr


# --- a mistyped command -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("list", "'list-sessions'"), ("serch", "'search'"), ("sho", "'show'"), ("improt", "'import'")],
)
def test_an_unknown_command_suggests_the_closest(typed: str, meant: str) -> None:
    result = invoke(typed, ok=False)
    assert result.exit_code == 2
    assert f"Error: No such command '{typed}'." in result.stderr and meant in result.stderr
    assert "Did you mean" in result.stderr


def test_an_unknown_command_far_from_any_suggests_nothing() -> None:
    result = invoke("zzzzzz", ok=False)
    assert result.exit_code == 2 and result.stderr.endswith("Error: No such command 'zzzzzz'.\n")


# --- never a traceback ---------------------------------------------------------------------------------


def _argv(name: str, tmp: Path, foreign: Path) -> list[str]:
    """Arguments for ``name`` naming a session that does not exist (and files where it takes one)."""
    return {
        "show": ["nope"],
        "fork": ["nope"],
        "rm": ["nope", "-y"],
        "rename": ["nope", "other"],
        "title": ["nope", "A title"],
        "export": ["nope"],
        "import": [str(foreign)],
        "import-axio": [str(foreign)],
        "search": ["word", "-s", "nope"],
        "similar": ["nope", "0"],
        "prune": ["--before", "2000-01-01", "-y"],
        "backup": [str(tmp / "backup.db")],
    }.get(name, [])


def test_no_command_prints_a_traceback_on_bad_input(console_script: Path, tmp_path: Path) -> None:  # noqa: F811
    good = tmp_path / "good.db"
    make_sessions(good, {"real-session": [text("user", "hello")]})
    foreign = tmp_path / "notes.txt"
    foreign.write_text("not a database\n" * 100)
    folder = tmp_path / "folder"
    folder.mkdir()
    before = foreign.read_bytes()
    setups = {
        "missing session": (["--db", str(good)], {}),
        "foreign file": (["--db", str(foreign)], {}),
        "directory as --db": (["--db", str(folder)], {}),
        "directory in the environment": ([], {"AXIO_CONTEXT_DB": str(folder)}),
    }
    runs = []
    for setup, (db_args, extra) in setups.items():
        for name in sorted(cli.commands):
            argv = [str(console_script), *db_args, name, *_argv(name, tmp_path, foreign)]
            env = {**os.environ, **extra}
            proc = subprocess.Popen(
                argv,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
            )
            runs.append((setup, name, proc))
            if len(runs) % 6 == 0:  # a few at a time: the machine is shared
                for _, _, p in runs[-6:]:
                    p.wait(120)
    for setup, name, proc in runs:
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err and "Traceback" not in out, (setup, name, err)
        if proc.returncode != 0:
            assert err.strip().splitlines()[-1].startswith("Error:"), (setup, name, err)
    assert foreign.read_bytes() == before and list(folder.iterdir()) == []
    assert [s["session_id"] for s in invoke_json("--db", good, "list-sessions", "--json")] == ["real-session"]
    assert json.loads(invoke("--db", good, "show", "real-session", "--json").stdout)["messages"]
