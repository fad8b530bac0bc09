"""SIGKILL at random moments: nothing that was acknowledged is lost, nothing is half-written.

A real child process (``procs/crash_worker.py``) writes to one database file until it is killed,
logging every operation before it starts and after its ``await`` returned. Each round kills it
at a random instant (sometimes while it is still starting or opening the file); then the parent
checks the file with plain SQL (integrity, dense positions, blob reference counts) and
reads it back through the public API. The state must equal the model built from the
acknowledged operations, or that model plus the one operation in flight: so every append that
returned is present, an ``append_many`` is all or nothing, a fork is a consistent copy.
The next round's child reopens the same file and carries on from there.

Set ``CRASH_SEED`` to replay a failing run; the seed is in every failure message.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlean

from axio_context import ImageBlock, Message
from axio_context.compaction import SUMMARY_ACK, AutoCompactStore, ExtractiveSummarizer
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.store import chunks
from axio_context_sqlite.store.packing import DICT_SHIFT, FLAG_ZSTD
from tests.procs import SEALING_ENV
from tests.procs.crash_worker import IMAGES, PROJECT
from tests.store.test_multiprocess import expected_texts
from tests.support.sqlite_checks import check_storage, scalar, texts

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parents[1] / "procs" / "crash_worker.py"
MP_WORKER = Path(__file__).resolve().parents[1] / "procs" / "mp_worker.py"
SEED = int(os.environ.get("CRASH_SEED", time.time_ns() % 1_000_000))


def read_log(path: Path) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], dict[str, Any] | None]:
    """(acknowledged (intent, ack) pairs in order, the intent in flight or None)."""
    records = []
    for line in path.read_text().split("\n"):
        if line.startswith(("I {", "A {")) and line.endswith("}"):
            records.append((line[0], json.loads(line[2:])))
    path.unlink()
    done: list[tuple[dict[str, Any], dict[str, Any]]] = []
    pending: dict[str, Any] | None = None
    for kind, record in records:
        if kind == "I":
            assert pending is None, "two intents without an acknowledgement"
            pending = record
        else:
            assert pending is not None, "an acknowledgement without an intent"
            done.append((pending, record))
            pending = None
    return done, pending


def created(db: Path) -> bool:
    """Whether the schema exists; a child killed while creating the file leaves it empty (and
    sound: the next ``connect`` creates the schema), never half a schema."""
    if not db.exists():
        return False
    conn = sqlean.connect(f"file:{db}?mode=ro", uri=True)  # leave WAL recovery to what follows
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    assert not tables or {"sessions", "messages", "blobs", "checkpoints", "settings"} <= tables, tables
    return bool(tables)


def kill_at_random(
    mode: str,
    db: Path,
    log: Path,
    round_no: int,
    rng: random.Random,
    early: float = 0.2,
    on_ready: Callable[[], None] = lambda: None,
    env: dict[str, str] | None = None,
) -> None:
    """Run one child and SIGKILL it at a random moment; fail if it died any other way.

    With probability ``early`` the moment may fall before the child is ready (interpreter start,
    opening the file); ``on_ready`` runs once the child says it is about to write.
    """
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), mode, str(db), str(log), str(round_no), str(rng.randrange(1 << 30))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    try:
        if rng.random() < early:  # anywhere, including interpreter start and opening the file
            time.sleep(rng.uniform(0.05, 0.6))
        else:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                proc.wait(30)
            on_ready()
            time.sleep(rng.uniform(0.005, 0.25))
        alive = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert proc.stderr is not None
        assert alive, f"seed {SEED}: the worker died before the kill:\n{proc.stderr.read()}"
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


# --- appends, batches, forks, pops, tokens -------------------------------------------------------

Item = tuple[str, int]  # (text, image index or -1)


class Model:
    """What the database must hold: each session's transcript and token totals."""

    def __init__(self) -> None:
        self.sessions: defaultdict[str, list[Item]] = defaultdict(list)
        self.tokens: defaultdict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))

    def copy(self) -> Model:
        other = Model()
        for sid, items in self.sessions.items():
            other.sessions[sid] = list(items)
        other.tokens.update(self.tokens)
        return other

    def apply(self, op: dict[str, Any], new_id: str | None) -> None:
        sid = op["s"]
        if op["op"] == "append":
            self.sessions[sid].extend((text, image) for text, image in op["msgs"])
        elif op["op"] == "fork":
            assert new_id is not None
            self.sessions[new_id] = list(self.sessions[sid])
            self.tokens[new_id] = self.tokens[sid]
        elif op["op"] == "pop":
            if self.sessions[sid]:
                self.sessions[sid].pop()
        elif op["op"] == "tokens":
            i, o = self.tokens[sid]
            self.tokens[sid] = (i + 1, o + 2)

    def state(self) -> dict[str, tuple[list[Item], tuple[int, int]]]:
        """Sessions that hold anything (an empty session may or may not have a row)."""
        names = set(self.sessions) | set(self.tokens)
        out = {s: (self.sessions.get(s, []), self.tokens.get(s, (0, 0))) for s in names}
        return {s: v for s, v in out.items() if v != ([], (0, 0))}


def _item(message: Message) -> Item:
    images = [b for b in message.content if isinstance(b, ImageBlock)]
    return message.text, IMAGES.index(images[0].data) if images else -1


async def stored_state(db: Path) -> dict[str, tuple[list[Item], tuple[int, int]]]:
    """Every session of the file, read first through a read-only connection (which must cope with
    the WAL a killed writer left behind), then through a read-write one: both must agree."""
    states = []
    for readonly in (True, False):
        async with connect(db, readonly=readonly) as conn:
            out = {}
            for info in await SQLiteContextStore(conn, "root", project=PROJECT).list_sessions():
                store = SQLiteContextStore(conn, info.session_id, project=PROJECT)
                full = [_item(m) for m in await store.get_full_history()]
                assert len(full) == info.message_count
                out[info.session_id] = (full, await store.get_context_tokens())
        states.append({s: v for s, v in out.items() if v != ([], (0, 0))})
    assert states[0] == states[1]
    return states[1]


def verify_round(db: Path, log: Path, model: Model, label: str) -> tuple[Model, int]:
    """Check the file after a kill against ``model`` plus the logged operations.

    Returns the model of what the file now holds, and how many operations were acknowledged.
    """
    done, pending = read_log(log) if log.exists() else ([], None)
    for op, ack in done:
        model.apply(op, ack.get("new"))
    stored = asyncio.run(stored_state(db))
    check_storage(db)
    expected = model.state()
    if stored == expected:
        return model, len(done)
    # Only the operation in flight may differ, and only by having happened completely.
    assert pending is not None, f"{label}: state differs from the acknowledged ops"
    after = model.copy()
    new_id = None
    if pending["op"] == "fork":
        extra = set(stored) - set(expected)
        assert len(extra) == 1, f"{label}: {extra}"
        new_id = extra.pop()
    after.apply(pending, new_id)
    assert stored == after.state(), f"{label}: in-flight {pending} half-applied?"
    return after, len(done)


@pytest.mark.parametrize("sealing", ["as-shipped", "constantly"])
def test_sigkill_while_appending_and_forking(
    tmp_path: Path, sealing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``constantly``: the child folds the keyword-index queue at 8 messages and seals blocks of
    4 (but the newest 2), so kills land in folds, seals and the unsealing pops and forks do."""
    env = None
    if sealing == "constantly":
        env = {SEALING_ENV: "4,2,8"}
        monkeypatch.setattr(chunks, "CHUNK", 4)  # this process reads (and checks) the same chunks
        monkeypatch.setattr(chunks, "SEAL_TAIL", 2)
    rng = random.Random(SEED)
    db, log = tmp_path / "crash.db", tmp_path / "ops.log"
    model = Model()
    acknowledged = 0
    for round_no in range(12):
        kill_at_random("lineage", db, log, round_no, rng, env=env)
        if not created(db):
            assert not log.exists() or "A {" not in log.read_text()
            continue  # killed before the schema was in place: nothing was acknowledged
        model, n = verify_round(db, log, model, f"seed {SEED} round {round_no}")
        acknowledged += n
    assert acknowledged > 100, f"seed {SEED}: the child hardly wrote anything ({acknowledged} ops)"
    # the rounds stored compressed payloads, and none of them names a dictionary
    flags = "SELECT flags FROM messages UNION ALL SELECT flags FROM chunks"
    assert scalar(db, f"SELECT count(*) FROM ({flags}) WHERE flags & {FLAG_ZSTD}") > 0
    assert scalar(db, f"SELECT count(*) FROM ({flags}) WHERE flags >> {DICT_SHIFT}") == 0
    if sealing == "constantly":
        assert scalar(db, "SELECT COUNT(*) FROM chunks") > 0, f"seed {SEED}: nothing was sealed"


#: The survivor's appends per round: enough to outlast the kill, which comes up to 250 ms after
#: both start (since appends run on the event loop's thread, 600 sometimes finished first).
SURVIVOR_APPENDS = 3000


def test_sigkill_of_one_writer_while_another_keeps_writing(tmp_path: Path) -> None:
    """The killed process may die holding the write lock mid-transaction; the survivor (another
    process, its own connection) must carry on without an error reaching it."""
    rng = random.Random(SEED + 2)
    db, log = tmp_path / "shared.db", tmp_path / "ops.log"
    model = Model()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    overlapped = 0
    for round_no in range(4):
        survivor = subprocess.Popen(
            [
                sys.executable,
                str(MP_WORKER),
                str(db),
                "append",
                "survivor",
                f"s{round_no}",
                str(SURVIVOR_APPENDS),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert survivor.stdout is not None and survivor.stdin is not None
            assert survivor.stdout.readline().strip() == "ready"

            def release(survivor: subprocess.Popen[str] = survivor) -> None:
                assert survivor.stdin is not None
                survivor.stdin.write("go\n")
                survivor.stdin.flush()

            kill_at_random("lineage", db, log, round_no, rng, early=0, on_ready=release)
            overlapped += survivor.poll() is None  # still writing when the other one died
            _, err = survivor.communicate(timeout=60)
            assert survivor.returncode == 0, f"seed {SEED}: the surviving writer failed:\n{err}"
        finally:
            if survivor.poll() is None:
                survivor.kill()
                survivor.communicate()
        model, _ = verify_round(db, log, model, f"seed {SEED} round {round_no}")
    asyncio.run(_check_survivor(db))
    assert overlapped >= 2, f"seed {SEED}: the kill overlapped the other writer in {overlapped} of 4 rounds"


async def _check_survivor(db: Path) -> None:
    async with connect(db) as conn:
        history = texts(await SQLiteContextStore(conn, "survivor", project="mp").get_history())
    assert history == [t for r in range(4) for t in expected_texts(f"s{r}", SURVIVOR_APPENDS)]


# --- compaction ------------------------------------------------------------------------------------


async def check_compaction(db: Path) -> tuple[list[str], int]:
    """Check the view against the latest checkpoint; returns (full transcript texts, checkpoints)."""
    async with connect(db) as conn:
        inner = SQLiteContextStore(conn, "c", project=PROJECT)
        full = await inner.get_full_history()
        checkpoints = await inner.list_checkpoints()
        view = await inner.get_history()
        positions = [c.position for c in checkpoints]
        assert positions == sorted(positions)
        assert all(0 <= p <= len(full) for p in positions)
        if checkpoints:
            latest = checkpoints[-1]
            # One whole summary, then every message after the position it covers: old or new, no mixture.
            assert [m.role for m in latest.summary] == ["user", "assistant"]
            assert latest.summary[1].text == SUMMARY_ACK
            assert view == [*latest.summary, *full[latest.position :]]
        else:
            assert view == full
        wrapped = AutoCompactStore(inner, ExtractiveSummarizer(), max_tokens=1, keep_recent=2)
        assert await wrapped.get_full_history() == full
        assert await wrapped.get_history() == view  # nothing to repair: no tool calls
        return texts(full), len(checkpoints)


def test_sigkill_during_auto_compaction(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    db, log = tmp_path / "compact.db", tmp_path / "ops.log"
    transcript: list[str] = []
    checkpoints = compactions = 0
    for round_no in range(10):
        kill_at_random("compact", db, log, round_no, rng)
        if not created(db):
            assert not log.exists() or "A {" not in log.read_text()
            continue
        done, pending = read_log(log) if log.exists() else ([], None)
        for op, ack in done:
            if op["op"] == "append":
                transcript.append(op["text"])
            else:
                checkpoints = ack["checkpoints"]
                compactions += 1
        check_storage(db)
        full, count = asyncio.run(check_compaction(db))
        if pending is not None and pending["op"] == "append" and full == [*transcript, pending["text"]]:
            transcript.append(pending["text"])
        assert full == transcript, f"seed {SEED} round {round_no}: transcript lost or changed"
        if pending is not None and pending["op"] == "compact":
            assert count in (checkpoints, checkpoints + 1), f"seed {SEED} round {round_no}"
            checkpoints = count
        else:
            assert count == checkpoints, f"seed {SEED} round {round_no}"
    assert compactions > 10 and checkpoints > 10, f"seed {SEED}: too few compactions ran"
