"""MemoryContextStore against the shared contract, plus its own additions."""

from __future__ import annotations

import pytest

from axio_context import ContextStore, MemoryContextStore, Message
from axio_context.testing import (
    CheckpointStoreContract,
    ContextStoreContract,
    PopCheckpointContract,
    text,
)


class MemoryFactory:
    async def new(self) -> ContextStore:
        return MemoryContextStore()

    async def from_history(self, history: list[Message]) -> ContextStore:
        return await MemoryContextStore.from_history(history)

    async def from_context(self, context: ContextStore) -> ContextStore:
        return await MemoryContextStore.from_context(context)


class TestMemoryContract(ContextStoreContract, CheckpointStoreContract, PopCheckpointContract):
    @pytest.fixture
    def factory(self) -> MemoryFactory:
        return MemoryFactory()


async def test_constructor_history_and_pop() -> None:
    store = MemoryContextStore([text("user", "a"), text("assistant", "b")], session_id="fixed")
    assert store.session_id == "fixed"
    popped = await store.pop()
    assert popped == text("assistant", "b")
    assert await store.pop() == text("user", "a")
    assert await store.pop() is None


async def test_fork_is_deep() -> None:
    store = MemoryContextStore()
    msg = text("user", "a")
    await store.append(msg)
    child = await store.fork()
    msg.content.append(text("user", "mutated").content[0])
    assert len((await child.get_history())[0].content) == 1


class _Minimal(ContextStore):
    """A third-party store that implements only axio's two abstract methods."""

    def __init__(self) -> None:
        self.items: list[Message] = []

    async def append(self, message: Message) -> None:
        self.items.append(message)

    async def get_history(self) -> list[Message]:
        return list(self.items)


async def test_base_defaults_match_axio() -> None:
    store = _Minimal()
    sid = store.session_id
    assert sid == store.session_id and len(sid) == 32
    await store.append_many([text("user", "hello"), text("assistant", "hi")])
    assert len(await store.get_history()) == 2
    with pytest.raises(NotImplementedError):
        await store.clear()
    await store.set_context_tokens(5, 5)
    assert await store.get_context_tokens() == (0, 0)
    forked = await store.fork()
    assert isinstance(forked, MemoryContextStore)
    assert await forked.get_history() == await store.get_history()
    [info] = await store.list_sessions()
    assert (info.session_id, info.message_count, info.preview, info.created_at) == (sid, 2, "hello", "")
    copy = await _Minimal.from_history([text("user", "x")])
    assert [m.text for m in await copy.get_history()] == ["x"]
    await store.close()
