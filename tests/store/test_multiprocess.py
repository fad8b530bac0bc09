"""Several OS processes, each with its own ``connect``, writing one database file at once.

Every process opens the (new) file concurrently, waits at a start line, then writes as fast as it
can: appends to one shared session or to a session each, while another process adds tokens and
forks. No "database is locked" may reach a caller (the workers exit non-zero on any exception),
positions stay dense, every message is stored exactly once and in each writer's call order,
and token totals are exact.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from axio_context import Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.store import chunks
from tests.procs import SEALING_ENV
from tests.support.legacy import dictionary_rows, use_dictionaries
from tests.support.processes import run_together
from tests.support.sqlite_checks import check_storage, scalar, texts
from tests.support.words import prose

WORKER = Path(__file__).resolve().parents[1] / "procs" / "mp_worker.py"
APPENDS = 150
TOKEN_CALLS = 100


def expected_texts(name: str, count: int) -> list[str]:
    """What ``mp_worker.py append`` writes, in order."""
    out: list[str] = []
    for i in range(count):
        out += [f"{name}-{i}.{j}" for j in range(3)] if i % 5 == 4 else [f"{name}-{i}"]
    return out


def run_workers(
    db: Path, jobs: list[tuple[str, str, str, int]], extra_env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Start one process per job, release them together, and return each one's JSON result."""
    commands = [
        [str(WORKER), str(db), role, session, name, str(count)] for role, session, name, count in jobs
    ]
    return run_together(commands, timeout=60, extra_env=extra_env, forbid="locked")


@pytest.mark.parametrize(
    ("writers", "sealing"), [(2, False), (4, False), (4, True)], ids=["2", "4", "4-sealing"]
)
async def test_processes_append_to_one_session(
    tmp_path: Path, writers: int, sealing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``4-sealing``: every process folds the keyword index at 8 queued messages and seals blocks
    of 4 (but the newest 2) while the others append, fork and read the same session."""
    db = tmp_path / "new" / "shared.db"
    names = [f"w{k}" for k in range(writers)]
    jobs = [("append", "shared", name, APPENDS) for name in names]
    jobs.append(("tokens_forks", "shared", "tf", TOKEN_CALLS))
    extra_env = None
    if sealing:
        extra_env = {SEALING_ENV: "4,2,8"}
        monkeypatch.setattr(chunks, "CHUNK", 4)  # this process reads (and checks) the same chunks
        monkeypatch.setattr(chunks, "SEAL_TAIL", 2)
    results = run_workers(db, jobs, extra_env)
    if sealing:
        assert scalar(db, "SELECT COUNT(*) FROM chunks") > 0

    lengths = check_storage(db)
    async with connect(db) as conn:
        shared = SQLiteContextStore(conn, "shared", project="mp")
        history = texts(await shared.get_history())
        assert Counter(history) == Counter(t for n in names for t in expected_texts(n, APPENDS))
        for name in names:
            mine = [t for t in history if t.split("-")[0] == name]
            assert mine == expected_texts(name, APPENDS)  # each writer's call order
        for i, t in enumerate(history):  # a batch is one transaction: its three rows are adjacent
            if t.endswith(".0"):
                stem = t[:-2]
                assert history[i : i + 3] == [f"{stem}.0", f"{stem}.1", f"{stem}.2"]
        assert await shared.get_context_tokens() == (TOKEN_CALLS, 2 * TOKEN_CALLS)
        assert lengths["shared"] == len(history)

        forks = results[-1]["forks"]
        assert len(forks) == TOKEN_CALLS // 5
        for fork_id, position in forks:
            fork = SQLiteContextStore(conn, str(fork_id), project="mp")
            assert texts(await fork.get_history()) == history[: int(str(position))]
            assert lengths[str(fork_id)] == position


@pytest.mark.parametrize("writers", [2, 4])
async def test_processes_append_to_their_own_sessions(tmp_path: Path, writers: int) -> None:
    db = tmp_path / "own.db"
    names = [f"w{k}" for k in range(writers)]
    jobs = [("append", f"s-{name}", name, APPENDS) for name in names]
    jobs.append(("tokens_forks", "s-w0", "tf", TOKEN_CALLS))
    results = run_workers(db, jobs)

    lengths = check_storage(db)
    async with connect(db) as conn:
        for name in names:
            store = SQLiteContextStore(conn, f"s-{name}", project="mp")
            assert texts(await store.get_history()) == expected_texts(name, APPENDS)
            expected_tokens = (TOKEN_CALLS, 2 * TOKEN_CALLS) if name == "w0" else (0, 0)
            assert await store.get_context_tokens() == expected_tokens
        full = texts(await SQLiteContextStore(conn, "s-w0", project="mp").get_history())
        for fork_id, position in results[-1]["forks"]:
            fork = SQLiteContextStore(conn, str(fork_id), project="mp")
            assert texts(await fork.get_history()) == full[: int(str(position))]
        listed = await SQLiteContextStore(conn, "any", project="mp").list_sessions()
        assert len(listed) == writers + TOKEN_CALLS // 5
    assert sum(1 for s in lengths if s.startswith("s-")) == writers


async def test_recompress_while_other_processes_append(tmp_path: Path) -> None:
    """One process rewrites a database off the dictionaries an earlier build trained, again and
    again, while two others append compressible messages: every append succeeds, nothing is lost
    or out of order, no row ever names a deleted dictionary, and none is left."""
    db = tmp_path / "recompress.db"
    old = [
        Message(role="user", content=[TextBlock(text=f"old-{i} " + prose(random.Random(i), 140))])
        for i in range(150)
    ]
    async with connect(db) as conn:
        await SQLiteContextStore(conn, "old", project="mp").append_many(old)
    assert use_dictionaries(db) > 0
    names = ["w0", "w1"]
    jobs = [("append_long", f"s-{name}", name, APPENDS) for name in names]
    jobs.append(("recompress", "r", "r", 12))
    results = run_workers(db, jobs)

    check_storage(db)  # includes: every dictionary a row names exists
    assert sum(results[-1]["removed"]) == 1  # the earlier build's, once
    assert results[-1]["dangling"] == [0] * 12  # no row ever named a deleted dictionary
    assert dictionary_rows(db) == 0 and scalar(db, "SELECT count(*) FROM zstd_dicts") == 0
    async with connect(db) as conn:
        assert await SQLiteContextStore(conn, "old", project="mp").get_history() == old
        for name in names:
            history = texts(await SQLiteContextStore(conn, f"s-{name}", project="mp").get_history())
            assert [t.split(" ", 1)[0] for t in history] == expected_texts(name, APPENDS)
