"""The bridges open a database through the registry (issue 31, item 2): ``AxioConversationStore``
and ``AxioContextSession`` take a path or a URL of any registered backend, open it themselves and
close it in their ``close``; a handle no backend owns, or a scheme none opens, is refused when
the object is made, in one line, not with an ``AttributeError`` on first use."""

from __future__ import annotations

import threading
from pathlib import Path

import asyncpg
import pytest
from pydantic_ai import messages as pm
from pydantic_ai.conversation import Conversation

from axio_context.backends import BackendMissingError
from axio_context.errors import StoreClosedError
from axio_context_openai_agents import AxioContextSession
from axio_context_pydantic_ai import AxioConversationStore
from tests.support.backends import Backend


def _turn(i: int) -> list[pm.ModelMessage]:
    return [
        pm.ModelRequest(parts=[pm.UserPromptPart(f"question {i}")]),
        pm.ModelResponse(parts=[pm.TextPart(f"answer {i}")], model_name="m"),
    ]


async def _connections_to(url: str) -> int:
    """How many server connections are open to the database at ``url`` (this one left out)."""
    conn = await asyncpg.connect(url)
    try:
        n: int = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        )
        return n
    finally:
        await conn.close()


async def _open_resources(backend: Backend) -> int:
    """What an opened database holds open: SQLite's connection threads (aiosqlite's workers),
    PostgreSQL's server connections."""
    if backend.name == "sqlite":
        return sum("_connection_worker_thread" in t.name for t in threading.enumerate())
    return await _connections_to(backend.where)


async def test_a_conversation_store_opens_a_path_or_url_and_closes_it(backend_db: Backend) -> None:
    before = await _open_resources(backend_db)
    async with AxioConversationStore(backend_db.where, project="p") as store:
        conversation = Conversation(conversation_id="c", messages=_turn(0))
        await store.save(conversation)
        assert await _open_resources(backend_db) > before  # opened on first use
    assert await _open_resources(backend_db) == before  # closed with the store
    with pytest.raises(StoreClosedError):
        await store.load("c")

    async with backend_db.open() as handle:  # what it wrote is in the database at that location
        loaded = await AxioConversationStore(handle).load("c")
        assert loaded is not None and len(loaded.messages) == 2
        assert len(await backend_db.store("c").get_history()) == 2


async def test_a_conversation_store_on_a_handle_leaves_it_open(backend: Backend) -> None:
    store = AxioConversationStore(backend.handle)
    await store.save(Conversation(conversation_id="c", messages=_turn(0)))
    await store.close()
    with pytest.raises(StoreClosedError):
        await store.load("c")
    assert len(await backend.store("c").get_history()) == 2  # the caller's handle still works


async def test_a_relative_path_is_a_file_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = AxioConversationStore("chat.db")
    try:
        await store.save(Conversation(conversation_id="c", messages=_turn(0)))
    finally:
        await store.close()
    assert (tmp_path / "chat.db").is_file()
    async with AxioConversationStore(f"sqlite://{tmp_path / 'chat.db'}") as again:
        assert (loaded := await again.load("c")) is not None and len(loaded.messages) == 2


@pytest.mark.parametrize("handle", [42, object(), b"chat.db", None])
def test_a_conversation_store_refuses_what_no_backend_owns_at_once(handle: object) -> None:
    with pytest.raises(TypeError, match=r"^not a database connection or pool of any backend: \w+ \(pass"):
        AxioConversationStore(handle)


def test_an_unknown_scheme_is_refused_at_once_naming_the_known_ones() -> None:
    with pytest.raises(
        BackendMissingError, match=r"no backend opens mysql:// databases \(known: .*postgresql://"
    ):
        AxioConversationStore("mysql://localhost/chat")
    with pytest.raises(BackendMissingError, match="no backend opens mysql://"):
        AxioContextSession("s", "mysql://localhost/chat")


async def test_a_session_opens_the_url_in_the_environment_when_given_none(
    backend_db: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXIO_CONTEXT_DB", backend_db.where)
    before = await _open_resources(backend_db)
    session = AxioContextSession("s", project="p")
    try:
        await session.add_items([{"role": "user", "content": "hello"}])
        assert await session.get_items() == [{"role": "user", "content": "hello"}]
    finally:
        session.close()
    assert await _open_resources(backend_db) == before
    async with backend_db.open():
        assert len(await backend_db.store("s").get_history()) == 1


async def test_a_session_takes_an_sqlite_url(tmp_path: Path) -> None:
    session = AxioContextSession("s", f"sqlite://{tmp_path / 'agents.db'}")
    try:
        await session.add_items([{"role": "user", "content": "hello"}])
    finally:
        session.close()
    again = AxioContextSession("s", tmp_path / "agents.db")  # the same file by its path
    try:
        assert await again.get_items() == [{"role": "user", "content": "hello"}]
    finally:
        again.close()
