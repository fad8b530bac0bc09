"""The ConversationStore protocol's behaviours on our store: revisions, branches as forks, forks,
scopes, tail reads, deletes, and a session id another adapter owns."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from pydantic_ai import messages as pm
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict, ConversationEntry
from pydantic_ai.exceptions import UserError

from axio_context import Message, TextBlock
from axio_context.errors import SessionOwnerError
from axio_context_pydantic_ai import AxioConversationStore, save_messages
from tests.support.backends import Backend

WHEN = datetime(2026, 11, 26, 2, 0, tzinfo=UTC)


def turn(i: int) -> list[pm.ModelMessage]:
    return [
        pm.ModelRequest(parts=[pm.UserPromptPart(f"question {i}", timestamp=WHEN)]),
        pm.ModelResponse(parts=[pm.TextPart(f"answer {i}")], model_name="m", timestamp=WHEN),
    ]


async def saved(store: AxioConversationStore, cid: str, turns: int, scope: str | None = None) -> Conversation:
    conversation = Conversation(conversation_id=cid)
    for i in range(turns):
        conversation.messages.extend(turn(i))
        await store.save(conversation, scope=scope)
    return conversation


async def test_stale_revision_is_a_conflict_and_writes_nothing(backend: Backend) -> None:
    store = AxioConversationStore(backend.handle)
    await saved(store, "c", 1)
    a = await store.load("c")
    b = await store.load("c")
    assert a is not None and b is not None
    a.messages.extend(turn(1))
    b.messages.extend(turn(2))
    await store.save(a)
    with pytest.raises(ConversationConflict):
        await store.save(b)
    loaded = await store.load("c")
    assert loaded is not None and [m.parts[0].content for m in loaded.messages[::2]] == [  # type: ignore[union-attr]
        "question 0",
        "question 1",
    ]
    assert len(await backend.store("c").get_history()) == 4  # b's messages were not stored
    with pytest.raises(ConversationConflict):  # a new conversation over a stored one
        await store.save(Conversation(conversation_id="c", messages=turn(9)))


async def test_write_record_with_a_stale_expected_revision_is_refused_by_the_store(backend: Backend) -> None:
    """The store's own check, without pydantic-ai's: ``Conversation.save`` reads the record and
    compares revisions before it calls ``write_record``, which hides a store that would not. Here
    ``write_record`` is called as a second writer would reach it, with the revision it read before
    the first writer's save, in order (no race): it must refuse and write nothing."""
    store = AxioConversationStore(backend.handle)
    await saved(store, "c", 1)
    read = await store.read_record("c")
    assert read is not None and read.head_id is not None
    history = await store.read_history(read.head_id)

    def after(head: str, i: int) -> list[ConversationEntry]:
        first = ConversationEntry(parent_id=head, message=turn(i)[0])
        return [first, ConversationEntry(parent_id=first.id, message=turn(i)[1])]

    first_writer = after(read.head_id, 1)
    moved = dataclasses.replace(read, head_id=first_writer[-1].id, revision="r-first")
    await store.write_record(moved, new_entries=first_writer, expected_revision=read.revision)

    second_writer = after(read.head_id, 2)  # the same parent: it read before the first saved
    stale = dataclasses.replace(read, head_id=second_writer[-1].id, revision="r-second")
    with pytest.raises(ConversationConflict):
        await store.write_record(stale, new_entries=second_writer, expected_revision=read.revision)
    with pytest.raises(ConversationConflict):  # "no record yet" while one is stored
        await store.write_record(stale, new_entries=second_writer, expected_revision=None)
    with pytest.raises(ConversationConflict):
        await store.delete_record("c", expected_revision=read.revision)

    now = await store.read_record("c")
    assert now is not None and (now.revision, now.head_id) == ("r-first", first_writer[-1].id)
    assert [e.id for e in await store.read_history(now.head_id)] == [
        *(e.id for e in history),
        *(e.id for e in first_writer),
    ]
    for entry in second_writer:  # none of the refused writer's entries was stored
        with pytest.raises(KeyError):
            await store.read_entry(entry.id)
    assert len(await backend.store("c").get_history()) == 4


async def test_rewritten_history_branches_into_a_fork(backend: Backend) -> None:
    store = AxioConversationStore(backend.handle)
    await saved(store, "c", 3)
    loaded = await store.load("c")
    assert loaded is not None
    rewritten = Conversation(
        conversation_id="c", messages=[*loaded.messages[:2], *turn(7)], revision=loaded.revision
    )
    await store.save(rewritten)
    record = await store.read_record("c")
    assert record is not None and len(record.branches) == 1
    now = await store.load("c")
    assert now is not None and now.messages == [*loaded.messages[:2], *turn(7)]
    # The new line is a fork of the conversation's session at the shared point: nothing copied.
    main = backend.store("c")
    forks = await main.list_forks()
    assert [(f.fork_position, f.message_count) for f in forks] == [(2, 4)]
    assert len(await main.get_history()) == 6  # the old branch is still the session's transcript
    # And the conversation can branch back to it.
    back = await store.branch("c", from_entry=record.branches[0], expected_revision=now.revision)
    assert back.messages == loaded.messages


async def test_branch_then_continue(backend: Backend) -> None:
    store = AxioConversationStore(backend.handle)
    await saved(store, "c", 3)
    loaded = await store.load("c")
    assert loaded is not None
    branched = await store.branch("c", at=2, expected_revision=loaded.revision)
    branched.messages.extend(turn(5))
    await store.save(branched)
    again = await store.load("c")
    assert again is not None and again.messages == [*loaded.messages[:2], *turn(5)]
    with pytest.raises(ConversationConflict):
        await store.branch("c", at=1, expected_revision=loaded.revision)


async def test_forks_share_entries_and_stay_isolated(backend: Backend) -> None:
    store = AxioConversationStore(backend.handle)
    await saved(store, "c", 2)
    fork = await store.fork("c", new_conversation_id="f")
    fork.messages.extend(turn(8))
    await store.save(fork)
    original = await store.load("c")
    assert original is not None
    original.messages.extend(turn(9))
    await store.save(original)
    f = await store.load("f")
    c = await store.load("c")
    assert f is not None and c is not None
    assert f.messages[:4] == c.messages[:4]
    assert f.messages[4:] == turn(8) and c.messages[4:] == turn(9)
    entries_f = await store.load_entries("f")
    entries_c = await store.load_entries("c")
    assert entries_f is not None and entries_c is not None
    assert [e.id for e in entries_f[:4]] == [e.id for e in entries_c[:4]]  # shared, not copied
    with pytest.raises(ConversationConflict):
        await store.fork("c", new_conversation_id="f")
    half = await store.fork("c", at=1)
    assert len(half.messages) == 1


async def test_scopes_listing_limits_and_delete(backend: Backend) -> None:
    store = AxioConversationStore(backend.handle)
    await saved(store, "a1", 1, scope="alice")
    await saved(store, "b1", 1, scope="bob")
    await saved(store, "a2", 3, scope="alice")
    assert [r.conversation_id for r in await store.list_conversations()] == ["a2", "b1", "a1"]
    assert [r.conversation_id for r in await store.list_conversations(scope="alice")] == ["a2", "a1"]
    assert [r.conversation_id for r in await store.list_conversations(limit=1)] == ["a2"]
    assert (await backend.store("a2").info()).project == "alice"
    tail = await store.load("a2", limit=3)
    full = await store.load("a2")
    assert tail is not None and full is not None and tail.messages == full.messages[-3:]
    assert (await store.load("a2", limit=0)).messages == []  # type: ignore[union-attr]
    with pytest.raises(UserError):
        await store.load("a2", limit=-1)
    await store.delete("a2", scope="bob")  # another scope: left as it is
    assert await store.load("a2") is not None
    await store.delete("a2")
    assert await store.load("a2") is None
    assert [r.conversation_id for r in await store.list_conversations(scope="alice")] == ["a1"]
    # The transcript stays a session; saving the id again starts a new one beside it.
    assert len(await backend.store("a2").get_history()) == 6
    again = await saved(store, "a2", 1)
    assert (await store.load("a2")).messages == again.messages  # type: ignore[union-attr]


async def test_entries_and_history_by_id(backend: Backend) -> None:
    store = AxioConversationStore(backend.handle)
    await saved(store, "c", 2)
    entries = await store.load_entries("c")
    assert entries is not None
    for i, entry in enumerate(entries):
        assert await store.read_entry(entry.id) == entry
        assert await store.read_history(entry.id) == entries[: i + 1]
        assert await store.read_history(entry.id, limit=2) == entries[max(0, i - 1) : i + 1]
    with pytest.raises(LookupError):
        await store.read_entry("no-such-entry")


async def test_a_session_another_adapter_owns_is_refused(backend: Backend) -> None:
    other = backend.store("shared")
    await other.set_metadata({"adapter": "openai-agents"})
    await other.append(Message(role="user", content=[TextBlock(text="an openai-agents item")]))
    store = AxioConversationStore(backend.handle)
    with pytest.raises(SessionOwnerError, match="'openai-agents' adapter"):
        await store.save(Conversation(conversation_id="shared", messages=turn(0)))
    assert await store.load("shared") is None
    with pytest.raises(SessionOwnerError, match="'openai-agents' adapter"):
        await save_messages(backend.store("shared"), turn(0))
    plain = backend.store("plain")
    await plain.append(Message(role="user", content=[TextBlock(text="written without an adapter")]))
    with pytest.raises(SessionOwnerError, match="not written by the 'pydantic-ai' adapter"):
        await save_messages(plain, turn(0))
    assert len(await other.get_history()) == 1 and len(await plain.get_history()) == 1
    # A session the message_history helpers wrote is ours: a conversation of that id gets a new one.
    await save_messages(backend.store("helpers"), turn(0))
    assert (await backend.store("helpers").get_metadata())["adapter"] == "pydantic-ai"
    await store.save(Conversation(conversation_id="helpers", messages=turn(1)))
    loaded = await store.load("helpers")
    assert loaded is not None and loaded.messages == turn(1)


async def test_write_record_refuses_a_missing_head_and_a_broken_chain(backend: Backend) -> None:
    from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord

    store = AxioConversationStore(backend.handle)
    with pytest.raises(ConversationConflict):  # the head names an entry nobody stored
        await store.write_record(
            ConversationRecord(conversation_id="x", head_id="gone"), expected_revision=None
        )
    first = ConversationEntry(parent_id=None, message=turn(0)[0])
    stray = ConversationEntry(parent_id="elsewhere", message=turn(0)[1])
    with pytest.raises(ValueError, match="does not follow"):
        await store.write_record(
            ConversationRecord(conversation_id="x", head_id=stray.id),
            new_entries=[first, stray],
            expected_revision=None,
        )
    assert await store.read_record("x") is None
    assert await backend.store("x").get_history() == []
