"""Per-message id/timestamp/metadata and the tail read, as part of the ContextStore contract."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ..blocks import ProviderBlock, TextBlock
from ..errors import DecodeError, LimitError
from ..messages import Message
from .samples import StoreFactory, text

__all__ = ["ExtrasAndTailContract", "with_extras"]


def with_extras(i: int) -> Message:
    """Message ``i`` of a conversation whose messages carry an id, a timestamp and metadata."""
    return Message(
        role="user" if i % 2 == 0 else "assistant",
        content=[TextBlock(text=f"m{i}")],
        id=f"msg_{i}",
        timestamp=datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC) + timedelta(seconds=i),
        metadata={"n": i, "f": 0.5 + i, "nested": {"list": [1, 2.0, None, True, "ü"]}, "zero": 0.0},
    )


class ExtrasAndTailContract:
    """Mixed into :class:`~axio_context.testing.ContextStoreContract`: every store keeps a
    message's optional fields and reads the last messages of a history."""

    @pytest.fixture
    def factory(self) -> StoreFactory:
        raise NotImplementedError("provide a `factory` fixture returning a StoreFactory")

    async def test_message_extras_round_trip(self, factory: StoreFactory) -> None:
        store = await factory.new()
        sent = [with_extras(i) for i in range(4)]
        sent.insert(2, text("user", "plain"))
        sent.append(Message(role="user", content=[], id="only-id"))
        sent.append(Message(role="system", metadata={}))
        sent.append(
            Message(role="user", timestamp=datetime(2025, 1, 1, 12, tzinfo=timezone(timedelta(hours=5))))
        )
        await store.append(sent[0])
        await store.append_many(sent[1:])
        got = await store.get_history()
        assert got == sent
        assert [type(m.metadata["f"]) for m in got if m.metadata and "f" in m.metadata] == [float] * 4
        assert [type(m.metadata["n"]) for m in got if m.metadata and "n" in m.metadata] == [int] * 4
        assert got[2].to_dict() == {"role": "user", "content": [{"type": "text", "text": "plain"}]}
        assert got[2].id is None and got[2].timestamp is None and got[2].metadata is None
        assert got[0].to_dict()["id"] == "msg_0"
        fork = await store.fork()
        assert await fork.get_history() == sent

    async def test_message_extras_from_dict(self, factory: StoreFactory) -> None:
        store = await factory.new()
        message = with_extras(7)
        again = Message.from_dict(message.to_dict())
        assert again == message
        await store.append(again)
        assert await store.get_history() == [message]

    @pytest.mark.parametrize(
        "bad",
        [
            Message(role="user", metadata={1: "int key"}),  # type: ignore[dict-item]
            Message(role="user", metadata={"obj": object()}),
            Message(role="user", id=5),  # type: ignore[arg-type]
            Message(role="user", timestamp="yesterday"),  # type: ignore[arg-type]
            Message(role="user", metadata=[1]),  # type: ignore[arg-type]
        ],
    )
    async def test_message_extras_refused_when_not_storable(
        self, factory: StoreFactory, bad: Message
    ) -> None:
        store = await factory.new()
        await store.append(text("user", "kept"))
        with pytest.raises(DecodeError):
            await store.append_many([text("user", "not kept"), bad])
        assert await store.get_history() == [text("user", "kept")]

    async def test_tail_read(self, factory: StoreFactory) -> None:
        store = await factory.new()
        sent = [with_extras(i) if i % 3 == 0 else text("user", f"t{i}") for i in range(150)]
        await store.append_many(sent)
        for limit in (0, 1, 3, 64, 65, 149, 150, 151, 10_000):
            want = sent[-limit:] if limit else []
            assert await store.get_history(limit=limit) == want  # type: ignore[call-arg]
            assert await store.get_tail(limit) == want
        assert await store.get_history(limit=None) == sent  # type: ignore[call-arg]

    async def test_tail_read_of_empty_and_forked(self, factory: StoreFactory) -> None:
        store = await factory.new()
        assert await store.get_tail(5) == []
        sent = [text("user", f"p{i}") for i in range(10)]
        await store.append_many(sent)
        child = await store.fork()
        await child.append(text("assistant", "child"))
        await store.append(text("assistant", "parent"))
        assert await child.get_tail(3) == [*sent[-2:], text("assistant", "child")]
        assert await store.get_tail(2) == [sent[-1], text("assistant", "parent")]

    @pytest.mark.parametrize("limit", [-1, 1.5, True, "3", None])
    async def test_tail_read_refuses_bad_limits(self, factory: StoreFactory, limit: object) -> None:
        store = await factory.new()
        await store.append(text("user", "x"))
        with pytest.raises(LimitError):
            await store.get_tail(limit)  # type: ignore[arg-type]

    async def test_provider_block_with_inline_image_round_trips(self, factory: StoreFactory) -> None:
        store = await factory.new()
        image = "data:image/png;base64," + "QUJD" * 50_000
        item = {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": image}]}
        message = Message(role="user", content=[ProviderBlock(provider="openai", kind="message", data=item)])
        await store.append(message)
        assert await store.get_history() == [message]
