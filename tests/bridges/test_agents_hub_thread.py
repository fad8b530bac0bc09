"""Every session of a process opens its database on one shared hub thread, started once: a
session made and closed again (a cold open) starts and joins no thread of its own (issue 32,
cold open + first read); closing a database's last session still closes its connection."""

from __future__ import annotations

import threading
from pathlib import Path

from axio_context_openai_agents import AxioContextSession


def _hub_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("axio-context session hub")]


async def test_sessions_share_one_hub_thread(tmp_path: Path) -> None:
    first = AxioContextSession("a", tmp_path / "a.db", project="p")
    second = AxioContextSession("b", tmp_path / "b.db", project="p")
    await first.add_items([{"role": "user", "content": "a"}])
    await second.add_items([{"role": "user", "content": "b"}])
    assert len(_hub_threads()) == 1  # two databases, one thread
    hub, conn = first._hub, first._hub.opened if first._hub else None
    first.close()
    second.close()
    assert hub is not None and hub.opened is None and conn is not None
    assert not conn._running  # the last session's close closed the connection
    before = _hub_threads()
    for i in range(3):  # cold opens of a file: no thread started, none joined
        again = AxioContextSession("a", tmp_path / "a.db", project="p")
        assert [i["content"] for i in await again.get_items()] == ["a"]  # type: ignore[typeddict-item]
        again.close()
        assert _hub_threads() == before
