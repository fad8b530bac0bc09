"""Many writer processes on one PostgreSQL database, and a writer killed mid-transaction."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from axio_context.blocks import TextBlock
from axio_context_postgres import PostgresContextStore, connect

WORKER = Path(__file__).parent.parent / "procs" / "pg_writer.py"
PROCESSES = 8
APPENDS = 500
SESSIONS = 3


def _spawn(url: str, prefix: str, n: int, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), url, prefix, str(SESSIONS), str(n), tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _transcripts(url: str, prefix: str) -> dict[str, list[str]]:
    pool = await connect(url)
    try:
        out = {}
        for k in range(SESSIONS):
            store = PostgresContextStore(pool, f"{prefix}{k}", project="mp")
            history = await store.get_full_history()
            out[store.session_id] = [b.text for m in history for b in m.content if isinstance(b, TextBlock)]
            info = await store.info()
            assert info.message_count == len(history)  # the counter and the rows agree: no gap
        return out
    finally:
        await pool.close()


def test_eight_processes_append_to_shared_sessions(fresh_pg_url: str) -> None:
    procs = [_spawn(fresh_pg_url, "shared-", APPENDS, f"w{w}") for w in range(PROCESSES)]
    errors = []
    for p in procs:
        _out, err = p.communicate(timeout=240)
        if p.returncode != 0:
            errors.append(err.strip().splitlines()[-1:])
    assert errors == []
    stored = asyncio.run(_transcripts(fresh_pg_url, "shared-"))
    everything = [t for texts in stored.values() for t in texts]
    assert len(everything) == PROCESSES * APPENDS  # 0 lost
    assert Counter(everything) == Counter(f"w{w} {i}" for w in range(PROCESSES) for i in range(APPENDS))
    for texts in stored.values():  # each writer's messages stay in its order within a session
        for w in range(PROCESSES):
            mine = [int(t.split()[1]) for t in texts if t.startswith(f"w{w} ")]
            assert mine == sorted(mine)


def test_killed_writer_loses_nothing_acknowledged(fresh_pg_url: str) -> None:
    p = _spawn(fresh_pg_url, "killed-", 100_000, "k")
    assert p.stdout is not None
    acked: list[str] = []
    while len(acked) < 300:
        line = p.stdout.readline()
        assert line, p.stderr.read() if p.stderr else ""
        acked.append(line.split(maxsplit=2)[2].strip())
    os.kill(p.pid, signal.SIGKILL)  # most likely inside an append's transaction
    p.communicate(timeout=30)
    stored = asyncio.run(_transcripts(fresh_pg_url, "killed-"))
    everything = {t for texts in stored.values() for t in texts}
    assert set(acked) <= everything
    # Positions are dense whatever the kill interrupted: an unfinished transaction left nothing.
    for texts in stored.values():
        numbers = [int(t.split()[1]) for t in texts]
        assert numbers == sorted(numbers)
