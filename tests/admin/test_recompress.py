"""``recompress`` overlapping another ``recompress``, a vacuum, or writers on other connections and
processes: no interleaving may leave a row or chunk naming a compression dictionary that is gone.

A recompress holds no lock between its batches. The interleavings are made deterministic with
its progress callback (called between batches, after a batch committed) and, for the moment
between training and the first batch, a wrapper around ``Dictionaries.train``; the processes
meet at files in a rendezvous directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axio_context import Message, TextBlock, ToolResultBlock
from axio_context_sqlite import Database, SQLiteContextStore, connect
from axio_context_sqlite.database import RecompressReport
from axio_context_sqlite.store import packing as storage
from axio_context_sqlite.store import recompressing as admin
from tests.support.sqlite_checks import check_storage, column
from tests.support.words import prose

ROOT = Path(__file__).resolve().parents[2]
WAIT: float = 60.0  # seconds any side waits for the other before failing


def _messages(seed: int, n: int) -> list[Message]:
    """Short texts (compressed with a dictionary) and tool results of ~0.6-2 KB."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 3 == 2:
            result = ToolResultBlock(tool_use_id=f"c{seed}.{i}", content=prose(rng, rng.randint(90, 300)))
            out.append(Message(role="user", content=[result]))
        else:
            out.append(Message(role="assistant", content=[TextBlock(text=prose(rng, rng.randint(12, 40)))]))
    return out


def _dict_ids(path: Path) -> list[int]:
    return column(path, "SELECT id FROM zstd_dicts ORDER BY id")


async def _filled(path: Path, sessions: int, per_session: int) -> dict[str, list[Message]]:
    """A database of ``sessions`` sessions, compressed with dictionary 1; what each one holds."""
    expected = {f"s{s}": _messages(s, per_session) for s in range(sessions)}
    async with connect(path) as conn:
        for session_id, messages in expected.items():
            await SQLiteContextStore(conn, session_id).append_many(messages)
    assert _dict_ids(path) == [1]
    return expected


async def _read_back_exactly(path: Path, expected: dict[str, list[Message]]) -> None:
    """Every session, read on a fresh connection (it holds only the dictionaries in the file),
    is what was written; and the file passes the storage checks."""
    async with connect(path) as conn:
        for session_id, messages in expected.items():
            assert await SQLiteContextStore(conn, session_id).get_history() == messages, session_id
    check_storage(path)


def _pausing_once(paused: threading.Event, resume: threading.Event) -> Callable[[int, int], None]:
    """A progress callback that, after the first batch, signals ``paused`` and waits for ``resume``
    (on the recompressing connection's worker thread, holding no lock)."""
    calls = [0]

    def progress(done: int, total: int) -> None:
        calls[0] += 1
        if calls[0] == 1:
            paused.set()
            assert resume.wait(WAIT), "never resumed"

    return progress


async def _wait(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, WAIT), "the other side never got there"


async def test_a_run_paused_between_batches_while_another_runs_whole(db_path: Path) -> None:
    """The review's interleaving: A trains 2 and rewrites a batch; B trains 3, rewrites every row
    and deletes 1 and 2 (no row uses them), then a full vacuum runs (``vacuum --recompress``); A
    resumes. A's next batch adopts 3 instead of writing with the deleted 2."""
    expected = await _filled(db_path, sessions=3, per_session=800)
    async with connect(db_path) as a_conn, connect(db_path) as b_conn:
        a, b = Database(a_conn, db_path), Database(b_conn, db_path)
        paused, resume = threading.Event(), threading.Event()
        a_run = asyncio.create_task(a.recompress(_pausing_once(paused, resume)))
        try:
            await _wait(paused)
            assert _dict_ids(db_path) == [1, 2]
            b_report = await b.recompress()
            await b.vacuum(full=True)
        finally:
            resume.set()
        a_report = await a_run
    await _read_back_exactly(db_path, expected)
    assert b_report.dictionary == 3 and b_report.dictionaries_removed == 2
    assert a_report.dictionary == 3  # A finished with B's, the newest
    assert _dict_ids(db_path) == [3]
    async with connect(db_path) as conn:  # ids are never reused
        assert (await Database(conn, db_path).recompress()).dictionary == 4


@pytest.mark.parametrize("at_end", [False, True], ids=["after-first-batch", "before-final-delete"])
async def test_an_older_run_finishing_keeps_a_newer_runs_dictionary(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, at_end: bool
) -> None:
    """B trains 3 and stops before its first batch (no row uses 3 yet); A, paused with 2 after
    its first batch, or after its last one and before its final delete, resumes and finishes. A
    must not delete 3: B is about to write with it, and a dictionary trained later would get id 3
    again while B's connection still holds the first 3 in memory."""
    expected = await _filled(db_path, sessions=3, per_session=800)
    async with connect(db_path) as a_conn, connect(db_path) as b_conn:
        a, b = Database(a_conn, db_path), Database(b_conn, db_path)
        a_paused, a_resume = threading.Event(), threading.Event()
        b_trained, b_resume = threading.Event(), threading.Event()
        train = storage.Dictionaries.train

        def train_then_wait(self: storage.Dictionaries, **kwargs: Any) -> int | None:
            out = train(self, **kwargs)
            if self is b_conn.dicts:
                b_trained.set()
                assert b_resume.wait(WAIT), "never resumed"
            return out

        monkeypatch.setattr(storage.Dictionaries, "train", train_then_wait)
        progress = None if at_end else _pausing_once(a_paused, a_resume)
        rewrite = admin._recompress_table

        def rewrite_then_wait(*args: Any) -> Any:  # after the last batch's transaction: no lock held
            out = rewrite(*args)
            if at_end and "chunks" in args and a_conn.dicts in args:
                a_paused.set()
                assert a_resume.wait(WAIT), "never resumed"
            return out

        monkeypatch.setattr(admin, "_recompress_table", rewrite_then_wait)
        a_run = asyncio.create_task(a.recompress(progress))
        b_run: asyncio.Task[RecompressReport] | None = None
        try:
            await _wait(a_paused)
            b_run = asyncio.create_task(b.recompress())
            await _wait(b_trained)
            assert _dict_ids(db_path) == [1, 2, 3]
            a_resume.set()
            a_report = await a_run
        finally:
            a_resume.set()
            b_resume.set()
            if b_run is not None:
                await asyncio.wait([b_run])
        b_report = await b_run
        monkeypatch.undo()
        async with connect(db_path) as c_conn:  # a later run: a new id, whatever b holds in memory
            c_report = await Database(c_conn, db_path).recompress()
        for session_id, messages in expected.items():
            assert await SQLiteContextStore(b_conn, session_id).get_history() == messages, session_id
    await _read_back_exactly(db_path, expected)
    assert (a_report.dictionary, b_report.dictionary) == ((2, 3) if at_end else (3, 3))
    assert c_report.dictionary == 4 and _dict_ids(db_path) == [4]


# --- two processes --------------------------------------------------------------------------------


def _wait_for(flag: Path) -> None:
    """Block until ``flag`` exists (another process created it)."""
    deadline = time.monotonic() + WAIT
    while not flag.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{flag.name} never appeared")
        time.sleep(0.01)


def _writer_messages(part: int) -> list[Message]:
    return _messages(100 + part, 150)


async def _child_main(db: Path, role: str, meet: Path) -> dict[str, Any]:
    """One process's part; the flags in ``meet`` order them:

    first: recompress, pausing after its first batch (``first_paused``) until ``writer_2``;
    writer: appends (with the dictionary it loaded, 1 or first's 2) once ``first_paused``, then
    ``writer_1``; appends again (that dictionary is gone now) once ``second_done``, then ``writer_2``;
    second: once ``writer_1``, a whole recompress, then ``second_done``.
    """
    async with connect(db) as conn:
        if role == "first":

            def progress(done: int, total: int) -> None:
                if not (meet / "first_paused").exists():
                    (meet / "first_paused").touch()
                    _wait_for(meet / "writer_2")

            report = await Database(conn, db).recompress(progress)
            return {"dictionary": report.dictionary, "rows": report.rows}
        if role == "second":
            await asyncio.to_thread(_wait_for, meet / "writer_1")
            report = await Database(conn, db).recompress()
            (meet / "second_done").touch()
            return {"dictionary": report.dictionary, "rows": report.rows}
        assert role == "writer"
        store = SQLiteContextStore(conn, "w")
        for part, flag, after in ((0, "first_paused", "writer_1"), (1, "second_done", "writer_2")):
            await asyncio.to_thread(_wait_for, meet / flag)
            messages = _writer_messages(part)
            for i in range(0, len(messages), 5):
                if i % 10:
                    await store.append_many(messages[i : i + 5])
                else:
                    for m in messages[i : i + 5]:
                        await store.append(m)
            (meet / after).touch()
        return {"messages": len(await store.get_history())}


def child() -> None:
    """Entry point of a child process: ``python -c '...child()' DB ROLE MEET``; prints one JSON line."""
    db, role, meet = sys.argv[1:4]
    print(json.dumps(asyncio.run(_child_main(Path(db), role, Path(meet)))), flush=True)


def _run_children(db: Path, meet: Path) -> dict[str, dict[str, Any]]:
    """Start the three processes of :func:`_child_main` and return each one's JSON line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = "from tests.admin.test_recompress import child; child()"
    procs = {
        role: subprocess.Popen(
            [sys.executable, "-c", code, str(db), role, str(meet)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for role in ("first", "writer", "second")
    }
    results: dict[str, dict[str, Any]] = {}
    try:
        for role, p in procs.items():
            out, err = p.communicate(timeout=3 * WAIT)
            assert p.returncode == 0, f"{role} failed (status {p.returncode}):\n{err}"
            results[role] = json.loads(out)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
    return results


async def test_two_processes_recompress_at_once_beside_a_writer(tmp_path: Path) -> None:
    """Two OS processes run ``recompress`` on a database of 3,200 messages, the second one whole
    while the first is paused between batches; a third process appends before the second run
    and after it (the dictionary it holds is gone by then). Every session reads back exactly,
    every dictionary a row names exists, and both runs end on the newest dictionary."""
    db = tmp_path / "two.db"
    meet = tmp_path / "meet"
    meet.mkdir()
    expected = await _filled(db, sessions=4, per_session=800)
    results = await asyncio.to_thread(_run_children, db, meet)
    assert results["writer"]["messages"] == 300
    expected["w"] = _writer_messages(0) + _writer_messages(1)
    await _read_back_exactly(db, expected)
    assert results["second"]["dictionary"] == 3 and results["first"]["dictionary"] == 3
    assert _dict_ids(db) == [3]
