"""openai-agents' session with a TTL (``AxioContextSession(..., ttl=...)``, as ``RedisSession``
takes one), on SQLite and PostgreSQL: an expired session reads as empty, is not listed, and the
next write starts it afresh; a bad TTL is refused at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from axio_context.backends.registry import open_database
from axio_context.expiry import InvalidTTLError
from axio_context_openai_agents import AxioContextSession
from tests.support.backends import Backend


def _item(text: str) -> Any:
    return {"role": "user", "content": text}


async def test_an_expired_session_reads_empty_and_starts_afresh(backend_db: Backend) -> None:
    session = AxioContextSession("chat", backend_db.where, project="p", ttl=3600)
    short = AxioContextSession("brief", backend_db.where, project="p", ttl=0.01)
    try:
        await session.add_items([_item("hello"), _item("again")])
        assert [i.get("content") for i in await session.get_items()] == ["hello", "again"]
        await short.add_items([_item("soon gone")])
        await asyncio.sleep(0.3)
        assert await short.get_items() == []
        assert await short.pop_item() is None
        await short.add_items([_item("new start")])  # a Redis session's key, gone, is made anew
        await asyncio.sleep(0.3)
        assert await short.get_items() == []
        assert len(await session.get_items()) == 2
    finally:
        session.close()
        short.close()
    async with open_database(backend_db.where) as db:
        assert [i.session_id for i in (await db.list_sessions()).sessions] == ["chat"]


def test_a_bad_ttl_is_refused_at_once(tmp_path: Any) -> None:
    for bad in (-1, 0, float("nan"), "60"):
        with pytest.raises(InvalidTTLError, match="ttl"):
            AxioContextSession("s", str(tmp_path / "x.db"), ttl=bad)  # type: ignore[arg-type]
