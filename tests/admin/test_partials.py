"""Stale partial files: a real ``export -o`` or ``backup`` killed by SIGKILL mid-write leaves its
hidden partial beside the destination; the next run to that destination removes it, and only
it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.admin.files import remove_stale
from tests.support.cli_helpers import invoke

ROOT = Path(__file__).resolve().parents[2]


def _db(path: Path) -> None:
    async def build() -> None:
        async with connect(path) as conn:
            for s in range(3):
                store = SQLiteContextStore(conn, f"s{s}", project="/p")
                await store.append_many([text("user", f"q{s}.{i}") for i in range(300)])

    asyncio.run(build())


def _killed_mid_write(mode: str, db: Path, dest: Path) -> None:
    """Run the writer until it says it is mid-write, then SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.procs.partial_writer", mode, str(db), str(dest)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline().strip()
        if line != "ready":
            proc.wait(30)
            raise AssertionError(f"the writer did not get mid-write: {proc.stderr.read()}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


def _partials(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}.") and ".partial" in p.name)


@pytest.mark.parametrize("mode", ["export", "backup"])
def test_a_killed_write_leaves_a_partial_the_next_run_removes(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "context.db"
    _db(db)
    out = tmp_path / "out" / ("all.jsonl" if mode == "export" else "copy.db")
    out.parent.mkdir()
    out.write_bytes(b"the earlier file")
    _killed_mid_write(mode, db, out)
    left = _partials(out.parent, out.name)
    assert left, "the kill left no partial file"
    assert out.read_bytes() == b"the earlier file"  # untouched

    # a live process's partial (ours) and another destination's partial stay
    live = out.parent / f".{out.name}.{os.getpid()}.abc123.partial"
    live.write_bytes(b"still being written")
    other = out.parent / f".other.json.{left[0].split('.')[-2]}.partial"
    other.write_bytes(b"not this destination")

    if mode == "export":
        invoke("--db", db, "export", "--all", "-f", "jsonl", "-o", out)
        assert out.read_bytes().count(b'"kind":"message"') == 900
    else:
        invoke("--db", db, "backup", "--force", out)
    assert _partials(out.parent, out.name) == [live.name]
    assert other.exists()


def test_remove_stale_keeps_partials_of_running_processes(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        running = tmp_path / f".x.json.{sleeper.pid}.r4nd0m.partial"
        running.write_bytes(b"")
        legacy = tmp_path / ".x.json.r4nd0m.partial"  # named before pids: left alone
        legacy.write_bytes(b"")
        done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
        dead_pid = int(done.stdout)
        dead = tmp_path / f".x.json.{dead_pid}.r4nd0m.partial"
        dead.write_bytes(b"")
        dead_journal = tmp_path / f".x.json.{dead_pid}.r4nd0m.partial-journal"
        dead_journal.write_bytes(b"")
        assert sorted(remove_stale(target)) == sorted([dead, dead_journal])
        assert running.exists() and legacy.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
