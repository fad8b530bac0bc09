"""The installed ``axio-context`` console script, run as a real process against a real database.

The script comes from the environment running the tests when the project is installed there
(CI installs it with ``pip install -e '.[dev]'``); otherwise the project is installed once per
test session into a throwaway venv (no pip of its own, dependencies seen through a ``.pth`` to
this interpreter's site-packages, ``pip install --no-deps`` of this checkout).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import random
import resource
import signal
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pytest

from axio_context.testing import every_block_message, text
from axio_context_sqlite import SQLiteContextStore, connect
from tests.support.words import prose

REPO = Path(__file__).resolve().parents[2]


def _installed_here() -> Path | None:
    script = Path(sys.executable).parent / "axio-context"
    try:
        metadata.distribution("axio-context")
    except metadata.PackageNotFoundError:
        return None
    return script if script.is_file() else None


@pytest.fixture(scope="session")
def console_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = _installed_here()
    if found is not None:
        return found
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "_test_parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            *isolation,
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return venv / "bin" / "axio-context"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(extra)
    return env


async def _fill(path: Path) -> None:
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "proc-session", project="/proj")
        await store.append_many(every_block_message())
        await store.add_context_tokens(12, 34)
        await (await store.fork()).append(text("user", "forked"))


def test_console_script_against_a_real_database(console_script: Path, tmp_path: Path) -> None:
    db = tmp_path / "real.db"
    asyncio.run(_fill(db))
    env = _env(tmp_path)

    def run(*args: str | Path, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(console_script), *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        assert done.returncode == code, (done.stdout, done.stderr)
        return done

    rows = json.loads(run("--db", db, "list-sessions", "--json").stdout)
    assert sorted(r["message_count"] for r in rows) == [6, 7]
    assert "## summary" not in run("--db", db, "show", "proc").stdout
    exported = tmp_path / "all.jsonl"
    run("--db", db, "export", "--all", "-f", "jsonl", "-o", exported)
    copy = tmp_path / "copy.db"
    assert run("--db", copy, "import", exported).stdout.startswith("imported 2 session(s), 7 message(s)")
    assert run("--db", copy, "export", "--all", "-f", "jsonl").stdout == exported.read_text()

    user_error = run("--db", db, "show", "nope", code=1)
    assert user_error.stderr == "Error: no session id starts with 'nope'\n"
    missing = run("--db", tmp_path / "missing.db", "stats", code=1)
    assert missing.stderr == f"Error: no database at {tmp_path / 'missing.db'}\n"
    assert "Traceback" not in missing.stderr
    assert run("--db", db, "export", "--bogus", code=2).stderr.startswith("Usage: axio-context export")


def test_fresh_machine_list_sessions_exits_0(console_script: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, XDG_DATA_HOME=str(tmp_path / "data"))
    env.pop("AXIO_CONTEXT_DB", None)
    done = subprocess.run(
        [str(console_script), "list-sessions"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"no sessions yet (database: {tmp_path / 'data' / 'axio-context' / 'context.db'})\n"


def test_python_dash_m(console_script: Path, tmp_path: Path) -> None:
    python = console_script.parent / "python"
    done = subprocess.run(
        [str(python), "-m", "axio_context_sqlite", "--version"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "axio-context, version 0.1.0\n"


def _with_terminal_stderr(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float, **kw: object
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """Run ``args`` with stderr on a pseudo-terminal; returns the process and what it drew there."""
    import pty  # POSIX only

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(args, stderr=follower, env=env, cwd=cwd, check=False, timeout=timeout, **kw)  # type: ignore[call-overload]
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    return done, drawn


async def _long(path: Path) -> None:
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "long", project="/proj")
        await store.append_many([text("user", f"message {i} " + "x" * 200) for i in range(3000)])


def test_progress_bar_only_on_a_terminal_and_a_closed_pipe(console_script: Path, tmp_path: Path) -> None:
    db = tmp_path / "long.db"
    asyncio.run(_long(db))
    env = _env(tmp_path, COLUMNS="80")
    # stderr is a terminal: the bar is drawn there, stdout still gets the whole export
    out = tmp_path / "out.json"
    done, drawn = _with_terminal_stderr(
        [str(console_script), "--db", str(db), "export", "--all", "-o", str(out)], env, tmp_path, 60
    )
    assert done.returncode == 0
    assert b"exporting" in drawn and b"100%" in drawn
    assert b"exported 1 session(s), 3000 message(s)" in drawn
    # stderr is a pipe: no bar
    piped = subprocess.run(
        [str(console_script), "--db", str(db), "export", "--all"],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=60,
    )
    assert piped.returncode == 0 and piped.stderr == b""
    assert piped.stdout == out.read_bytes()
    # the reader stops early (`| head`): quiet, with the exit code click gives every command on
    # a closed pipe; the same for a command printing text for people
    for args, first in (
        (["export", "--all", "-f", "jsonl"], b'{"kind":"session"'),
        (["show", "long"], b"# Session long"),
    ):
        proc = subprocess.Popen(
            [str(console_script), "--db", str(db), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
        )
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.read(100).startswith(first)
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        assert proc.wait(60) == 1, args
        assert err == b"", args


async def _unembedded(path: Path, n: int) -> None:
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "notes", project="/proj")
        await store.append_many(
            [text("user", f"note {i} about the parser and topic{i % 13}") for i in range(n)]
        )


def test_search_reindex_index_in_a_real_process(console_script: Path, tmp_path: Path) -> None:
    """search, reindex (its progress bar on a terminal only) and index, as a person runs them."""
    db = tmp_path / "search.db"
    asyncio.run(_unembedded(db, 2000))
    env = _env(tmp_path, COLUMNS="80")

    def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(console_script), "--db", str(db), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert done.returncode == code, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        return done

    first = run("search", "topic7", "-k", "3")
    assert first.stderr.startswith("note: no message is embedded yet")
    assert first.stdout.splitlines()[0].split() == ["SESSION", "POS", "ROLE", "WHEN", "SNIPPET"]
    assert "**topic7**" in first.stdout
    assert run("search", "--raw", "(topic7", code=1).stderr.startswith("Error: invalid FTS5 query")
    assert run("search", "--", '-"NEAR(topic7').returncode == 0

    done, drawn = _with_terminal_stderr(
        [str(console_script), "--db", str(db), "reindex"], env, tmp_path, 120, stdout=subprocess.PIPE
    )
    assert done.returncode == 0
    assert done.stdout == b"embedded 2,000 message(s) with axio-hashing-v1 (384 dimensions)\n"
    assert b"embedding" in drawn and b"100%" in drawn
    again = run("reindex")
    assert again.stderr == ""  # not a terminal: no bar
    status = json.loads(run("index", "--json").stdout)
    assert (status["embedded"], status["semantic"]) == (2000, "vec0")
    hits = json.loads(run("search", "topic7 parser note", "--mode", "semantic", "-k", "5", "--json").stdout)[
        "hits"
    ]
    assert len(hits) == 5 and all("topic7" in h["snippet"] for h in hits)
    # similar: a negative position counts from the end, which a shell passes as is
    last = hits[0]["session_id"]
    near = json.loads(run("similar", last[:8], "-1", "-k", "3", "--json").stdout)["hits"]
    assert len(near) == 3 and all(h["snippet"] for h in near)
    assert run("similar", last, "-99999", code=1).stderr.startswith(f"Error: session '{last}' has no message")


def _script(
    console_script: Path, tmp_path: Path, *args: str | Path, **kw: object
) -> subprocess.CompletedProcess[bytes]:
    """Run the console script (bytes out), its exit code left to the caller."""
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [str(console_script), *map(str, args)],
        capture_output=True,
        env=_env(tmp_path),
        cwd=tmp_path,
        timeout=60,
        check=False,
        **kw,
    )


def test_export_to_a_fifo_and_to_a_link_to_stdout_writes_through(
    console_script: Path, tmp_path: Path
) -> None:
    db = tmp_path / "real.db"
    asyncio.run(_fill(db))
    expected = _script(console_script, tmp_path, "--db", db, "export", "--all").stdout
    # a FIFO is written to, not replaced by a regular file
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # Our end is open (non-blocking) first, so the export never waits for a reader, and what it
    # writes fits the pipe's buffer; a process that replaced the FIFO would leave it empty.
    assert len(expected) < 60_000
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        done = _script(console_script, tmp_path, "--db", db, "export", "--all", "-o", fifo)
        assert done.returncode == 0, done.stderr
        received = b""
        while chunk := os.read(reader, 65536):
            received += chunk
    finally:
        os.close(reader)
    assert received == expected
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir() if "fifo" in p.name] == ["fifo"]  # no temporary file
    # a link to /dev/stdout (as /dev/stdout itself is): the export arrives on stdout, the link stays
    link = tmp_path / "to-stdout"
    link.symlink_to("/dev/stdout")
    done = _script(console_script, tmp_path, "--db", db, "export", "--all", "-o", link)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"


def test_export_to_a_descriptor_redirected_to_a_file_appends_to_it(
    console_script: Path, tmp_path: Path
) -> None:
    """``export -o /dev/stdout >> log.txt``: /dev/stdout resolves to log.txt, which must be
    written through (appended to), not replaced by a temporary file renamed over it."""
    db = tmp_path / "real.db"
    asyncio.run(_fill(db))
    expected = _script(console_script, tmp_path, "--db", db, "export", "--all").stdout
    link = tmp_path / "to-stdout"
    link.symlink_to("/dev/stdout")
    log = tmp_path / "log.txt"
    log.write_bytes(b"PRECIOUS EXISTING LOG LINE\n")
    for dest in ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", link):
        with log.open("ab") as out:
            cmd = [str(console_script), "--db", str(db), "export", "--all", "-o", str(dest)]
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=_env(tmp_path), check=False)
        assert done.returncode == 0, done.stderr
    assert log.read_bytes() == b"PRECIOUS EXISTING LOG LINE\n" + expected * 4
    # /dev/stderr, with the summary line the command prints there after the export
    err = tmp_path / "err.txt"
    err.write_bytes(b"first\n")
    with err.open("ab") as out:
        cmd = [str(console_script), "--db", str(db), "export", "--all", "-o", "/dev/stderr"]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=out, env=_env(tmp_path), check=False)
    assert done.returncode == 0
    assert err.read_bytes().startswith(b"first\n" + expected + b"exported 2 session(s)")
    # another process's descriptor (ours, open for appending) is appended to, not truncated
    theirs = tmp_path / "theirs.txt"
    theirs.write_bytes(b"theirs\n")
    with theirs.open("ab") as held:
        dest = f"/proc/{os.getpid()}/fd/{held.fileno()}"
        done = _script(console_script, tmp_path, "--db", db, "export", "--all", "-o", dest)
        assert done.returncode == 0, done.stderr
    assert theirs.read_bytes() == b"theirs\n" + expected
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary
    # a backup cannot be written through a descriptor: refused, the file left as it was
    with log.open("ab") as out:
        cmd = [str(console_script), "--db", str(db), "backup", "/dev/stdout", "--force"]
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=_env(tmp_path), check=False)
    assert done.returncode != 0 and b"not a regular file" in done.stderr
    assert log.read_bytes() == b"PRECIOUS EXISTING LOG LINE\n" + expected * 4


def _jsonl_export(path: Path, sessions: int, messages: int, size: int) -> None:
    """A ``jsonl`` export written directly: ``sessions`` of ``messages`` of ``size`` bytes each."""
    when = "2025-01-02T03:04:05.000+00:00"
    rng = random.Random(3)
    with path.open("w") as f:
        for s in range(sessions):
            header = {
                "kind": "session", "format": "axio-context", "version": 1, "id": f"s{s}", "project": "/p",
                "title": None, "metadata": None, "created_at": when, "updated_at": when, "parent_id": None,
                "fork_position": None, "inherited": 0, "message_count": messages, "input_tokens": 0,
                "output_tokens": 0, "checkpoints": [],
            }  # fmt: skip
            f.write(json.dumps(header) + "\n")
            for i in range(messages):
                body = prose(rng, size // 7)
                content = [{"type": "text", "text": body}]
                line = {
                    "kind": "message",
                    "session": f"s{s}",
                    "position": i,
                    "role": "user",
                    "content": content,
                }
                f.write(json.dumps({**line, "created_at": when}) + "\n")


def _peak_rss(console_script: Path, tmp_path: Path, *args: str | Path) -> int:
    """The peak resident memory (bytes) of the console script run with ``args``, measured by a
    parent of its own (this process's children's peak would include every earlier child)."""
    measure = (
        "import resource, subprocess, sys;"
        " subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL);"
        " print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, str(console_script), *map(str, args)],
        capture_output=True,
        env=_env(tmp_path),
        check=True,
        text=True,
    )
    return int(done.stdout) * 1024


def test_import_of_a_regular_file_streams_it(console_script: Path, tmp_path: Path) -> None:
    """A jsonl file is read from disk a session at a time (twice), not held whole in memory:
    importing ~48 MB takes little more memory than importing a few KB."""
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    _jsonl_export(small, 2, 2, 4096)
    _jsonl_export(big, 48, 250, 4096)
    size = big.stat().st_size
    assert size > 45_000_000
    baseline = _peak_rss(console_script, tmp_path, "--db", tmp_path / "a.db", "import", small)
    peak = _peak_rss(console_script, tmp_path, "--db", tmp_path / "b.db", "import", big)
    assert peak - baseline < size // 3, (peak, baseline, size)
    listed = _script(console_script, tmp_path, "--db", tmp_path / "b.db", "list-sessions", "--json")
    assert len(json.loads(listed.stdout)) == 48


def _file_size_limit(limit: int) -> Callable[[], None]:
    """A child's preexec: files it writes cannot grow past ``limit`` bytes (EFBIG, as on a full
    disk), and SIGXFSZ is ignored so the write fails instead of killing the process."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    return apply


async def _big(path: Path, n: int) -> None:
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "big", project="/proj")
        await store.append_many([text("user", os.urandom(600).hex()) for _ in range(n)])


def test_failed_backup_keeps_the_old_backup_and_names_the_destination(
    console_script: Path, tmp_path: Path
) -> None:
    db = tmp_path / "big.db"
    asyncio.run(_big(db, 1500))
    backups = tmp_path / "backups"
    dest = backups / "copy.db"
    assert _script(console_script, tmp_path, "--db", db, "backup", dest).returncode == 0
    old = dest.read_bytes()
    assert len(old) > 1_000_000
    asyncio.run(_big(db, 10))  # the database moved on since
    full = _script(
        console_script,
        tmp_path,
        "--db",
        db,
        "backup",
        dest,
        "--force",
        preexec_fn=_file_size_limit(256 << 10),
    )
    assert full.returncode == 1
    assert full.stderr.decode().startswith(f"Error: cannot write the backup {dest}: ")
    assert full.stderr.count(b"\n") == 1 and b"Traceback" not in full.stderr
    assert dest.read_bytes() == old  # the earlier backup is still whole
    assert sorted(p.name for p in backups.iterdir()) == ["copy.db"]  # no temporary file left
    # a first backup that fails leaves no empty file behind, so a retry is not "already exists"
    fresh = backups / "fresh.db"
    failed = _script(
        console_script, tmp_path, "--db", db, "backup", fresh, preexec_fn=_file_size_limit(256 << 10)
    )
    assert failed.returncode == 1 and str(fresh).encode() in failed.stderr
    assert sorted(p.name for p in backups.iterdir()) == ["copy.db"]
    retry = _script(console_script, tmp_path, "--db", db, "backup", fresh, preexec_fn=lambda: os.umask(0o022))
    assert retry.returncode == 0, retry.stderr
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert _script(console_script, tmp_path, "--db", fresh, "export", "--all").stdout == (
        _script(console_script, tmp_path, "--db", db, "export", "--all").stdout
    )


async def _unicode(path: Path) -> None:
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "cjk", project="/proj")
        await store.append_many(
            [text("user", "解析器 crashes on 日本語 input ✓"), text("assistant", "fixed")]
        )
        await store.set_title("标题 ✓")


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_text_a_terminal_cannot_encode_is_replaced(
    console_script: Path, tmp_path: Path, encoding: str
) -> None:
    db = tmp_path / "unicode.db"
    asyncio.run(_unicode(db))
    env = _env(tmp_path, PYTHONIOENCODING=encoding)

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            [str(console_script), "--db", str(db), *args],
            capture_output=True,
            env=env,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert b"Traceback" not in done.stderr
        return done

    assert "?? ?" in run("list-sessions").stdout.decode(encoding)  # the title, as the terminal can show it
    assert "??? crashes on ??? input ?" in run("show", "cjk").stdout.decode(encoding)
    assert "crashes" in run("search", "crashes").stdout.decode(encoding)
    # JSON is UTF-8 whatever the terminal: nothing lost
    [row] = json.loads(run("list-sessions", "--json").stdout.decode("utf-8"))
    assert row["title"] == "标题 ✓"
    assert json.loads(run("show", "cjk", "--json").stdout)["messages"][0]["content"][0]["text"].startswith(
        "解析器"
    )


def test_an_output_that_cannot_be_written_is_one_error_line(console_script: Path, tmp_path: Path) -> None:
    db = tmp_path / "real.db"
    asyncio.run(_fill(db))
    for args in (
        ["list-sessions"],
        ["list-sessions", "--json"],
        ["show"],
        ["search", "forked"],
        ["stats"],
        ["export"],
    ):
        with open("/dev/full", "wb") as full:
            done = subprocess.run(
                [str(console_script), "--db", str(db), *args],
                stdout=full,
                stderr=subprocess.PIPE,
                env=_env(tmp_path),
                cwd=tmp_path,
                check=False,
                timeout=60,
            )
        assert done.returncode == 1, args
        assert done.stderr.endswith(b"Error: cannot write the output: No space left on device\n"), (
            args,
            done.stderr,
        )
        assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr
    to_file = _script(console_script, tmp_path, "--db", db, "export", "-o", "/dev/full")
    assert (to_file.returncode, to_file.stderr) == (
        1,
        b"Error: cannot write /dev/full: No space left on device\n",
    )


def test_import_reads_a_pipe_once(console_script: Path, tmp_path: Path) -> None:
    db = tmp_path / "real.db"
    asyncio.run(_fill(db))
    exported = {
        fmt: _script(console_script, tmp_path, "--db", db, "export", "--all", "-f", fmt).stdout
        for fmt in ("json", "jsonl")
    }

    def listing(path: Path) -> object:
        return json.loads(_script(console_script, tmp_path, "--db", path, "list-sessions", "--json").stdout)

    expected = listing(db)
    for n, (fmt, name) in enumerate(
        [("json", "/dev/stdin"), ("jsonl", "/dev/stdin"), ("json", "-"), ("jsonl", "-")]
    ):
        copy = tmp_path / f"copy{n}.db"
        done = _script(console_script, tmp_path, "--db", copy, "import", name, input=exported[fmt])
        assert done.returncode == 0, (fmt, name, done.stderr)
        shown = "standard input" if name == "-" else name
        assert done.stdout == f"imported 2 session(s), 7 message(s) from {shown}\n".encode()
        assert listing(copy) == expected
    # a FIFO, as `import <(...)` gives
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [str(console_script), "--db", str(tmp_path / "fifo.db"), "import", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    try:
        with open(fifo, "wb") as writer:
            writer.write(exported["jsonl"])
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # it waited for the FIFO to be written a second time
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out == f"imported 2 session(s), 7 message(s) from {fifo}\n".encode()
    assert listing(tmp_path / "fifo.db") == expected
