"""At ``synchronous`` NORMAL a write that runs inline (the connection's worker idle) ends without
a turn of the event loop: no task is made for it, so nothing else runs meanwhile (issue 32:
``add_items`` of a turn, ``pop_item``). A write that has to wait for the worker still runs to its
end when its caller is cancelled, and the cancellation is raised once it is done."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from axio_context_openai_agents import AxioContextSession
from axio_context_sqlite.store.calls import run


def _turn(i: int) -> list[Any]:
    return [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]


async def _took_a_turn(call: Any) -> bool:
    """Whether awaiting ``call()`` let the event loop run a callback queued just before it."""
    ran: list[int] = []
    asyncio.get_running_loop().call_soon(ran.append, 1)
    await call()
    return bool(ran)


async def test_inline_writes_take_no_turn_of_the_loop(tmp_path: Path) -> None:
    session = AxioContextSession("s", tmp_path / "s.db", project="p", synchronous="NORMAL")
    try:
        await session.add_items(_turn(0))  # opens the database and claims the session
        # every 64th append in a process folds the keyword index on the worker: one of three may
        adds = [await _took_a_turn(lambda i=i: session.add_items(_turn(i))) for i in range(1, 4)]
        assert adds.count(False) >= 2
        pops = [await _took_a_turn(session.pop_item) for _ in range(3)]
        assert pops == [False, False, False]
        assert [i["content"] for i in await session.get_items()] == ["q0", "a0", "q1", "a1", "q2"]  # type: ignore[typeddict-item]
    finally:
        session.close()


async def test_a_waiting_write_runs_to_its_end_when_cancelled(tmp_path: Path) -> None:
    session = AxioContextSession("s", tmp_path / "s.db", project="p", synchronous="NORMAL")
    try:
        await session.add_items(_turn(0))
        assert session._hub is not None
        release = threading.Event()
        busy = asyncio.create_task(run(session._hub.opened, lambda _c: release.wait(10)))
        await asyncio.sleep(0)  # the worker holds that job: the pop below waits for it
        pop = asyncio.create_task(session.pop_item())
        await asyncio.sleep(0)
        pop.cancel()
        release.set()
        await busy
        try:
            await pop
            raise AssertionError("the pop was not cancelled")
        except asyncio.CancelledError:
            pass
        assert await session.get_items() == [{"role": "user", "content": "q0"}]  # popped, not lost halfway
    finally:
        session.close()
