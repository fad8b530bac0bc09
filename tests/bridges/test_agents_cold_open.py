"""A new ``AxioContextSession`` on a session this adapter already owns reads in two calls to the
store (its metadata, then the items), not three, and at NORMAL both skip the hop to the worker:
whether it holds messages matters only to a session no adapter has claimed (issue 32, cold
open); the ownership rules stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from axio_context.errors import SessionOwnerError
from axio_context_openai_agents import AxioContextSession
from axio_context_openai_agents.session import Synchronous
from axio_context_sqlite import SQLiteContextStore, connect
from tests.support.sqlite_checks import text_message


@pytest.mark.parametrize(("synchronous", "hops"), [("FULL", 2), ("NORMAL", 0)])
async def test_a_cold_open_of_an_owned_session_makes_two_store_calls(
    tmp_path: Path, synchronous: Synchronous, hops: int
) -> None:
    """FULL runs every call on the worker: two hops. NORMAL runs both short reads on the event
    loop's thread while the worker is idle: none."""
    path = tmp_path / "s.db"
    first = AxioContextSession("s", path, project="p", synchronous=synchronous)
    await first.add_items([{"role": "user", "content": f"m{i}"} for i in range(3)])
    first.close()
    again = AxioContextSession("s", path, project="p", synchronous=synchronous)
    try:
        assert [i["content"] for i in await again.get_items(limit=10)] == ["m0", "m1", "m2"]  # type: ignore[typeddict-item]
        assert again._hub is not None
        assert again._hub.opened.jobs == hops
    finally:
        again.close()


async def test_a_session_plain_code_wrote_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "plain", project="p").append(text_message("mine"))
    session = AxioContextSession("plain", path, project="p")
    try:
        with pytest.raises(SessionOwnerError):
            await session.get_items()
    finally:
        session.close()
