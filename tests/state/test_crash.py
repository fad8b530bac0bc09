"""Restore after SIGKILL, with a real process: an agent saving its state after every turn is
killed at a random instant; the state it comes back with is the last save that returned, or the
one in flight, whole (prompts, subagent sessions, usage and the subclass's field all agree).
The next round's process restores it and carries on. ``CRASH_SEED`` replays a run."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import sqlean

from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.state import load_state
from tests.procs.state_worker import SUBAGENTS, Agent, AgentState, turn_messages

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "procs" / "state_worker.py"
SEED = int(os.environ.get("CRASH_SEED", time.time_ns() % 1_000_000))


def _acked(log: Path) -> tuple[int, int | None]:
    """(the last turn whose save returned, the turn in flight or None)."""
    last, pending = 0, None
    for line in log.read_text().splitlines():
        kind, _, n = line.partition(" ")
        if kind == "I" and n.isdigit():
            pending = int(n)
        elif kind == "A" and n.isdigit():
            last, pending = int(n), None
    return last, pending


def _run_and_kill(db: Path, log: Path, rng: random.Random, after_turn: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, str(WORKER), str(db), str(log)], stdout=subprocess.PIPE, text=True, env=env
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while _acked(log)[0] < after_turn and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.random() * 0.02)  # anywhere inside the next save
        proc.send_signal(signal.SIGKILL)
        proc.wait()


async def _check(db: Path, low: int, high: int) -> int:
    async with connect(db) as conn:
        state = await load_state(SQLiteContextStore(conn, "agent", project="crash"), AgentState)
    assert state is not None
    n = state.turn
    assert low <= n <= high, (low, n, high)
    assert state.user_prompts == [f"turn {i}" for i in range(1, n + 1)]
    assert [u.uuid for u in state.extra_usages] == [f"u{i}" for i in range(1, n + 1)]
    for name in SUBAGENTS:
        assert state.subagent_history[name] == [m for i in range(1, n + 1) for m in turn_messages(name, i)]
    ctx = Agent().with_state(state)  # restores into the application's context
    assert ctx.subagent_history == state.subagent_history and ctx.user_prompts[-1] == f"turn {n}"
    return n


def test_restore_after_sigkill(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    db, log = tmp_path / "agent.db", tmp_path / "log"
    for round_no in range(3):
        log.write_text("")
        _run_and_kill(db, log, rng, after_turn=rng.randint(1, 6))
        last, pending = _acked(log)
        assert last > 0, f"seed {SEED} round {round_no}: the worker never finished a save"
        # turns count on from the restored state: the last acknowledged save is there, or the one in flight
        done = asyncio.run(_check(db, last, pending or last))
        assert done > 0
        with sqlean.connect(str(db)) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",), f"seed {SEED}"
            owned = raw.execute("SELECT count(*) FROM sessions WHERE owner_id = 'agent'").fetchone()[0]
            assert owned == len(SUBAGENTS)
