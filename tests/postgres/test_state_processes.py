"""save_state from several real processes at once, and a saver SIGKILLed mid-save: whatever
state is stored is one save whole (its fields and every subagent history from the same save),
never a mix, and nothing acknowledged is lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from axio_context_postgres import Pool, PostgresContextStore, connect
from axio_context_postgres.state import load_state
from tests.postgres.state_worker import state_of

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "state_worker.py"


def _start(url: str, session: str, name: str, count: int) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, str(WORKER), url, session, name, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert p.stdout is not None
    line = p.stdout.readline()
    if line.strip() != "ready":
        _, err = p.communicate(timeout=30)
        pytest.fail(f"worker did not start: {line!r}\n{err}")
    return p


def _go(p: subprocess.Popen[str]) -> None:
    assert p.stdin is not None
    p.stdin.write("go\n")
    p.stdin.flush()


def _close(p: subprocess.Popen[str]) -> None:
    if p.poll() is None:
        p.kill()
    p.wait()
    for stream in (p.stdin, p.stdout, p.stderr):
        if stream is not None:
            stream.close()


async def _whole_save(pool: Pool, session: str) -> tuple[str, int]:
    """The stored state, checked to be exactly one save; returns (writer, n)."""
    loaded = await load_state(PostgresContextStore(pool, session, project="p"))
    assert loaded is not None
    [prompt] = loaded.user_prompts
    name, n = prompt.split(":")
    assert loaded == state_of(name, int(n)), "the stored state mixes saves"
    positions = await pool.fetch(
        "SELECT s.agent_name, s.next_position FROM sessions s WHERE s.owner_id = $1 ORDER BY s.agent_name",
        session,
    )
    assert [tuple(r) for r in positions] == [("coder", 2), ("explorer", 2 * int(n))]
    return name, int(n)


async def test_processes_saving_one_session_store_one_whole_save(fresh_pg_url: str) -> None:
    procs = [_start(fresh_pg_url, "shared", f"w{k}", 12) for k in range(4)]
    try:
        for p in procs:
            _go(p)
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, f"worker failed (status {p.returncode}):\n{err}"
            assert out.split()[-1] == "12"
    finally:
        for p in procs:
            _close(p)
    pool = await connect(fresh_pg_url, min_size=1, max_size=2)
    try:
        name, n = await _whole_save(pool, "shared")
        assert name in {"w0", "w1", "w2", "w3"}
        assert n == 12  # every writer's last save was its 12th: one of them is the one stored
        owned = await pool.fetchval("SELECT count(*) FROM sessions WHERE owner_id = 'shared'")
        assert owned == 2  # one session per subagent, however many processes saved
    finally:
        await pool.close()


async def test_a_saver_killed_mid_save_loses_nothing_acknowledged(fresh_pg_url: str) -> None:
    p = _start(fresh_pg_url, "victim", "k", 10_000)
    try:
        _go(p)
        assert p.stdout is not None
        acknowledged = 0
        while acknowledged < 6:
            acknowledged = int(p.stdout.readline().split()[1])
        os.kill(p.pid, signal.SIGKILL)  # between or inside saves: its transaction never commits half
        p.wait()
    finally:
        _close(p)
    pool = await connect(fresh_pg_url, min_size=1, max_size=2)
    try:
        name, n = await _whole_save(pool, "victim")
        assert name == "k" and n >= acknowledged
    finally:
        await pool.close()
