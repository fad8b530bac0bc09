"""The openai-agents session's call paths on SQLite: one thread hop per call, the durability it
offers (``synchronous``), items read back without their native blocks, the item JSON written and
read with msgspec (and items ``json.dumps`` stored before still read)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from axio_context.blocks import TextBlock
from axio_context.checkpoints import Checkpoint
from axio_context.messages import Message
from axio_context_openai_agents import AxioContextSession
from axio_context_openai_agents.items import ITEM_KEY, item_json, items_of_values, loads, message_of
from axio_context_sqlite import SQLiteContextStore, connect


def _item(i: int) -> dict[str, Any]:
    if i % 2:
        return {"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": f'{{"x": {i}}}'}
    return {"role": "user", "content": f"question {i}"}


def _conn(session: AxioContextSession) -> Any:
    hub = session._hub
    assert hub is not None and hub.opened is not None
    return hub.opened


async def test_each_call_is_one_hop_to_the_connections_worker(tmp_path: Path) -> None:
    session = AxioContextSession("s", tmp_path / "a.db", project="p")
    try:
        await session.add_items([_item(i) for i in range(30)])  # opens, claims the session
        conn = _conn(session)
        calls = {
            "add_items": lambda: session.add_items([_item(i) for i in range(20)]),
            "get_items()": session.get_items,
            "get_items(limit=10)": lambda: session.get_items(limit=10),
            "pop_item": session.pop_item,
        }
        for name, call in calls.items():
            before = conn.jobs
            await call()
            # at most one: a short one (a turn's append, a pop, a 10-item read) runs on the
            # event loop's thread while the worker is idle (NORMAL), with no hop at all
            assert conn.jobs - before <= 1, name
    finally:
        session.close()


@pytest.mark.parametrize(("synchronous", "pragma"), [(None, 1), ("NORMAL", 1), ("FULL", 2)])
async def test_synchronous_is_offered(tmp_path: Path, synchronous: Any, pragma: int) -> None:
    session = AxioContextSession("s", tmp_path / "a.db", project="p", synchronous=synchronous)
    try:
        await session.add_items([_item(0)])
        conn = _conn(session)
        assert (await (await conn.execute("PRAGMA synchronous")).fetchone())[0] == pragma
    finally:
        session.close()


def test_synchronous_refused_where_it_means_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="NORMAL or FULL"):
        AxioContextSession("s", tmp_path / "a.db", synchronous="OFF")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="SQLite's setting"):
        AxioContextSession("s", "postgresql://nobody@localhost/none", synchronous="FULL")


async def test_two_durabilities_on_one_file_share_the_data(tmp_path: Path) -> None:
    full = AxioContextSession("s", tmp_path / "a.db", project="p", synchronous="FULL")
    normal = AxioContextSession("s", tmp_path / "a.db", project="p")
    try:
        await full.add_items([_item(0), _item(1)])
        assert await normal.get_items() == [_item(0), _item(1)]
    finally:
        full.close()
        normal.close()


@pytest.mark.parametrize(
    "item",
    [
        {"type": "x", "v": math.inf, "n": None},
        {"type": "x", "big": 2**80, "neg": -(2**70), "f": 0.1, "z": -0.0},
        {"role": "user", "content": "é ✓ \U0001f600"},
        {"role": "user", "content": "lone \ud800 surrogate"},
        {"type": "x", "t": (1, 2), "k": {"1": [True, False]}},
    ],
)
def test_item_json_reads_back_equal(item: dict[str, Any]) -> None:
    text = item_json(item)
    assert loads(text) == json.loads(json.dumps(item))


def test_items_stored_by_json_dumps_still_read() -> None:
    items = [{"type": "x", "v": math.nan}, {"role": "user", "content": "caf\u00e9 \ud800"}]
    got = items_of_values([json.dumps(i) for i in items])
    assert math.isnan(got[0]["v"]) and got[1] == items[1]


async def test_view_metadata_matches_the_view(tmp_path: Path) -> None:
    """``get_view_metadata`` gives, per message of ``get_history`` (limit, forks, checkpoints
    alike), its value, or the message itself when it has none."""
    async with connect(tmp_path / "a.db") as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append_many([message_of(_item(i), i) for i in range(12)])
        await store.append(Message(role="user", content=[TextBlock(text="no item")]))
        child = await store.fork()
        await child.append_many([message_of(_item(i), i) for i in range(12, 15)])
        await child.add_checkpoint(
            Checkpoint(position=3, summary=[Message(role="system", content=[TextBlock(text="sum")])])
        )

        def expected(history: list[Message]) -> list[Any]:
            return [m.metadata[ITEM_KEY] if m.metadata and ITEM_KEY in m.metadata else m for m in history]

        async def check() -> None:
            for s in (store, child):
                for limit in (None, 0, 1, 5, 100):
                    got = await s.get_view_metadata(ITEM_KEY, limit)
                    want = expected(await s.get_history(limit=limit))
                    assert [g if isinstance(g, str) else g.text for g in got] == [
                        w if isinstance(w, str) else w.text for w in want
                    ], (s.session_id, limit)

        await check()
        # positions a cleared run hid (as `clear_run` marks them) are left out as by get_history
        for sid in ("s", child.session_id):
            await conn.execute(
                "INSERT INTO hidden_messages (sid, position) SELECT sid, 11 FROM sessions WHERE id = ?",
                (sid,),
            )
        await conn.commit()
        assert len(await store.get_history()) == 12
        await check()


def test_a_session_left_open_exits_quietly(tmp_path: Path) -> None:
    """openai-agents' examples never close a session: the exit hook closes it, with no traceback
    (a thread pool cannot start at interpreter exit; the worker is joined on the exit thread)."""
    script = tmp_path / "left_open.py"
    script.write_text(
        "import asyncio\n"
        "from axio_context_openai_agents import AxioContextSession\n"
        "async def main():\n"
        f"    s = AxioContextSession('x', {str(tmp_path / 'open.db')!r})\n"
        "    await s.add_items([{'role': 'user', 'content': 'hi'}])\n"
        "    print(len(await s.get_items()))\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "1\n", "")


async def test_a_turns_items_share_one_timestamp(tmp_path: Path) -> None:
    """The items of one ``add_items`` are written by one transaction, stamped with one time read
    once; the next turn's come later."""
    session = AxioContextSession("s", tmp_path / "a.db", project="p")
    try:
        await session.add_items([_item(i) for i in range(5)])
        await session.add_items([_item(i) for i in range(5, 8)])
    finally:
        session.close()
    async with connect(tmp_path / "a.db") as conn:
        history = await SQLiteContextStore(conn, "s", project="p").get_history()
    stamps = [m.timestamp for m in history]
    assert len(set(stamps[:5])) == 1 and len(set(stamps[5:])) == 1
    first, later = stamps[0], stamps[5]
    assert first is not None and later is not None and first <= later
