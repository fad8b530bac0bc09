"""The memory blocks' contract suite, shipped with the library: subclass
:class:`MemoryBlockContract` and give a ``blocks`` fixture (a :class:`~.store.BlockStore` on a
fresh database); every backend passes the same cases (``tests/memory_blocks`` runs it on SQLite
and PostgreSQL through the registry)."""

from __future__ import annotations

import msgspec
import pytest

from axio_context.agents.variables import current_run_id

from .errors import (
    BlockExistsError,
    BlockInputError,
    BlockLimitError,
    BlockNotFoundError,
    NothingToUndoError,
    ReadOnlyBlockError,
    StaleVersionError,
)
from .model import MAX_LABEL, MemoryBlock
from .store import BlockStore

__all__ = ["MemoryBlockContract"]


class MemoryBlockContract:
    """Every store of memory blocks behaves the same (the ``blocks`` fixture gives one)."""

    @pytest.fixture
    def blocks(self) -> BlockStore:
        raise NotImplementedError("give a `blocks` fixture: a BlockStore on a fresh database")

    async def test_create_then_get(self, blocks: BlockStore) -> None:
        made = await blocks.create(
            MemoryBlock("human", "Name: Ada", limit=100, description="the user"), agent_id="a", run_id="r1"
        )
        got = await blocks.get("human", agent_id="a")
        assert got == made
        assert (got.value, got.limit, got.description, got.version, got.agent_id) == (
            "Name: Ada", 100, "the user", 1, "a",
        )  # fmt: skip
        assert (got.updated_by, got.run_id, got.read_only) == ("a", "r1", False)

    async def test_every_change_is_a_version_with_who_and_which_run(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("notes", "one"), agent_id="a")
        await blocks.append("notes", "three", agent_id="a", run_id="r2")
        await blocks.insert("notes", "two", 1, agent_id="a", by="helper")
        token = current_run_id.set("r4")
        try:
            await blocks.replace("notes", "three", "3", agent_id="a")
        finally:
            current_run_id.reset(token)
        last = await blocks.set("notes", "fresh", agent_id="a", expected_version=4)
        assert last.version == 5 and last.value == "fresh"
        history = await blocks.history("notes", agent_id="a")
        assert [(v.version, v.action, v.value, v.agent_id, v.run_id) for v in history] == [
            (1, "create", "one", "a", ""),
            (2, "append", "one\nthree", "a", "r2"),
            (3, "insert", "one\ntwo\nthree", "helper", ""),
            (4, "replace", "one\ntwo\n3", "a", "r4"),
            (5, "set", "fresh", "a", ""),
        ]
        assert all(v.created_at for v in history)

    async def test_diff_between_two_versions(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("h", "a\nb\n"))
        await blocks.replace("h", "b", "c")
        diff = await blocks.diff("h", 1, 2)
        assert diff.splitlines() == ["--- h@1", "+++ h@2", "@@ -1,2 +1,2 @@", " a", "-b", "+c"]
        assert await blocks.diff("h", 1) == diff
        with pytest.raises(BlockInputError, match="versions 1 to 2, not 9"):
            await blocks.diff("h", 1, 9)

    async def test_undo_and_redo(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("h", "a"))
        await blocks.set("h", "b")
        await blocks.set("h", "c")
        assert (await blocks.undo("h")).value == "b"
        assert (await blocks.undo("h")).value == "a"
        with pytest.raises(NothingToUndoError):
            await blocks.undo("h")
        assert (await blocks.redo("h")).value == "b"
        assert (await blocks.redo("h")).value == "c"
        with pytest.raises(NothingToUndoError):
            await blocks.redo("h")
        assert (await blocks.undo("h")).value == "b"
        await blocks.set("h", "d")  # a new edit drops what was undone
        with pytest.raises(NothingToUndoError):
            await blocks.redo("h")
        assert (await blocks.undo("h")).value == "b"
        actions = [v.action for v in await blocks.history("h")]
        assert actions == ["create", "set", "set", "undo", "undo", "redo", "redo", "undo", "set", "undo"]

    async def test_over_the_limit_is_refused_and_nothing_changes(self, blocks: BlockStore) -> None:
        with pytest.raises(BlockLimitError, match="over its limit of 3"):
            await blocks.create(MemoryBlock("h", "abcd", limit=3))
        assert await blocks.find("h") is None
        await blocks.create(MemoryBlock("h", "abc", limit=5))
        for write in (
            blocks.set("h", "abcdef"),
            blocks.append("h", "xyz"),
            blocks.insert("h", "xyz", 0),
            blocks.replace("h", "a", "aaaa"),
            blocks.update("h", limit=2),
        ):
            with pytest.raises(BlockLimitError):
                await write
        assert [v.version for v in await blocks.history("h")] == [1]
        assert (await blocks.get("h")).value == "abc"

    async def test_read_only_refuses_writes_until_lifted(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("rules", "be kind", read_only=True), agent_id="a")
        for write in (
            blocks.set("rules", "x", agent_id="a"),
            blocks.append("rules", "x", agent_id="a"),
            blocks.replace("rules", "kind", "mean", agent_id="a"),
            blocks.insert("rules", "x", agent_id="a"),
            blocks.undo("rules", agent_id="a"),
            blocks.delete("rules", agent_id="a"),
        ):
            with pytest.raises(ReadOnlyBlockError, match="read-only"):
                await write
        assert len(await blocks.history("rules", agent_id="a")) == 1
        lifted = await blocks.update("rules", read_only=False, agent_id="a")
        assert not lifted.read_only
        assert (await blocks.set("rules", "be very kind", agent_id="a")).value == "be very kind"

    async def test_a_stale_write_is_refused(self, blocks: BlockStore) -> None:
        read = await blocks.create(MemoryBlock("h", "v1"))
        await blocks.set("h", "theirs", expected_version=read.version)
        with pytest.raises(StaleVersionError, match="at version 2, not 1"):
            await blocks.set("h", "mine", expected_version=read.version)
        with pytest.raises(StaleVersionError):
            await blocks.undo("h", expected_version=read.version)
        assert (await blocks.get("h")).value == "theirs"
        assert len(await blocks.history("h")) == 2

    async def test_an_expected_version_that_is_no_whole_number_is_refused(self, blocks: BlockStore) -> None:
        """``True`` equals 1 and ``3.0`` equals 3 in Python: every write refuses them (and a text)
        rather than compare them with the block's version."""
        await blocks.create(MemoryBlock("h", "v1"))
        await blocks.set("h", "v2")
        await blocks.undo("h")  # version 3; its redo would take it back to v2
        for bad in (True, "3", 3.0):
            for write in (blocks.set, blocks.undo, blocks.redo, blocks.delete):
                args = ("h", "mine") if write == blocks.set else ("h",)
                with pytest.raises(BlockInputError, match="expected_version must be a whole number"):
                    await write(*args, expected_version=bad)  # type: ignore[arg-type]
        assert len(await blocks.history("h")) == 3

    async def test_load_refuses_a_record_the_store_could_not_have_written(self, blocks: BlockStore) -> None:
        """``load`` (what ``blocks import`` calls) holds a dumped record to the import's checks:
        a value over its limit, or the same block twice, writes nothing."""
        await blocks.create(MemoryBlock("h", "hello", limit=10))
        [row] = await blocks.dump()
        await blocks.delete("h")
        for bad, named in (
            ([msgspec.structs.replace(row, value="x" * 11)], "over the block's limit"),
            ([row, msgspec.structs.replace(row, label="other")], "appears twice"),
        ):
            with pytest.raises(BlockInputError, match=named):
                await blocks.load(bad)
            assert await blocks.list_blocks(agent_id=None) == []
        assert await blocks.load([row], replace=True) == [True]  # over the deleted block
        assert (await blocks.get("h")).value == "hello"

    async def test_bad_labels_and_unknown_labels(self, blocks: BlockStore) -> None:
        for label in ("", "   ", "x" * (MAX_LABEL + 1), " padded", "a\nb"):
            with pytest.raises(BlockInputError):
                await blocks.create(MemoryBlock(label, "v"))
        assert await blocks.list_blocks(agent_id=None) == []
        await blocks.create(MemoryBlock("x" * MAX_LABEL, "v"))
        with pytest.raises(BlockNotFoundError, match="no shared block 'nope'"):
            await blocks.get("nope")
        with pytest.raises(BlockNotFoundError):
            await blocks.set("nope", "v")
        with pytest.raises(BlockNotFoundError):
            await blocks.history("nope")
        with pytest.raises(BlockInputError):
            await blocks.create(MemoryBlock("h", "nul\x00inside"))
        with pytest.raises(BlockInputError, match="limit"):
            await blocks.create(MemoryBlock("h", "v", limit=0))

    async def test_agents_see_their_own_and_attached_shared_blocks(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("persona", "I am A"), agent_id="a")
        await blocks.create(MemoryBlock("persona", "I am B"), agent_id="b")
        await blocks.create(MemoryBlock("team", "we ship on Fridays"))
        assert [b.label for b in await blocks.list_blocks(agent_id="a")] == ["persona"]
        await blocks.attach("team", "a")
        await blocks.attach("team", "b")
        seen = await blocks.list_blocks(agent_id="a")
        assert [(b.label, b.agent_id) for b in seen] == [("persona", "a"), ("team", "")]
        await blocks.append("team", "and test on Thursdays", agent_id="b")
        shared = await blocks.get("team", agent_id="a")
        assert shared.value == "we ship on Fridays\nand test on Thursdays"
        assert shared.updated_by == "b" and shared.attached == ("a", "b")
        with pytest.raises(BlockExistsError):
            await blocks.create(MemoryBlock("team", "mine"), agent_id="a")
        await blocks.create(MemoryBlock("persona", "shared persona"))
        with pytest.raises(BlockExistsError):
            await blocks.attach("persona", "a")
        assert await blocks.detach("team", "a")
        assert not await blocks.detach("team", "a")
        assert [b.label for b in await blocks.list_blocks(agent_id="a")] == ["persona"]
        assert len(await blocks.list_blocks(agent_id=None)) == 4

    async def test_rename_keeps_history_and_refuses_a_taken_label(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("old", "v"), agent_id="a")
        await blocks.create(MemoryBlock("other", "w"), agent_id="a")
        with pytest.raises(BlockExistsError):
            await blocks.rename("old", "other", agent_id="a")
        renamed = await blocks.rename("old", "new", agent_id="a")
        assert (renamed.label, renamed.version) == ("new", 2)
        assert [v.label for v in await blocks.history("new", agent_id="a")] == ["old", "new"]
        assert await blocks.find("old", agent_id="a") is None

    async def test_delete_and_search(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("human", "Likes GREEN tea"), agent_id="a")
        await blocks.create(MemoryBlock("persona", "A helpful 100% assistant", description="tea expert"))
        assert [b.label for b in await blocks.search("tea")] == ["human", "persona"]
        assert [b.label for b in await blocks.search("green TEA")] == ["human"]
        assert [b.label for b in await blocks.search("100%")] == ["persona"]
        assert await blocks.search("tea", agent_id="b") == []
        with pytest.raises(BlockInputError):
            await blocks.search("  ")
        gone = await blocks.delete("human", agent_id="a")
        assert (gone.value, gone.updated_by, gone.version) == ("Likes GREEN tea", "a", 1)
        assert await blocks.find("human", agent_id="a") is None
        assert [b.label for b in await blocks.search("tea")] == ["persona"]
        again = await blocks.create(MemoryBlock("human", "new"), agent_id="a")
        assert again.version == 3  # its history goes on: create, delete, create
        assert [v.action for v in await blocks.history("human", agent_id="a")] == [
            "create",
            "delete",
            "create",
        ]
        with pytest.raises(NothingToUndoError):  # a new start: nothing before it to restore
            await blocks.undo("human", agent_id="a")

    async def test_delete_keeps_the_history_and_undo_brings_the_block_back(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("human", "v1", description="the user"), agent_id="a")
        await blocks.set("human", "v2", agent_id="a", run_id="r1")
        gone = await blocks.delete("human", agent_id="a", expected_version=2)
        assert (gone.value, gone.version) == ("v2", 2)
        assert await blocks.find("human", agent_id="a") is None
        assert await blocks.list_blocks(agent_id="a") == [] and await blocks.list_blocks(agent_id=None) == []
        for write in (blocks.set("human", "x", agent_id="a"), blocks.delete("human", agent_id="a")):
            with pytest.raises(BlockNotFoundError):
                await write
        history = await blocks.history("human", agent_id="a")
        assert [(v.version, v.action, v.value) for v in history] == [
            (1, "create", "v1"), (2, "set", "v2"), (3, "delete", "v2"),
        ]  # fmt: skip
        back = await blocks.undo("human", agent_id="a")
        assert (back.value, back.version, back.description) == ("v2", 4, "the user")
        assert await blocks.get("human", agent_id="a") == back
        again = await blocks.redo("human", agent_id="a")  # the delete, once more
        assert (again.value, again.version) == ("v2", 5)
        assert await blocks.find("human", agent_id="a") is None
        assert [v.action for v in await blocks.history("human", agent_id="a")][3:] == ["undo", "delete"]
        assert (await blocks.undo("human", agent_id="a")).value == "v2"
        assert (await blocks.undo("human", agent_id="a")).value == "v1"  # and on, through the set

    async def test_a_deleted_shared_block_keeps_its_label_and_attachments(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("team", "we ship on Fridays"))
        await blocks.attach("team", "a")
        await blocks.delete("team")
        assert await blocks.list_blocks(agent_id="a") == []
        with pytest.raises(BlockExistsError, match="deleted block 'team'"):
            await blocks.create(MemoryBlock("team", "mine"), agent_id="a")
        with pytest.raises(BlockNotFoundError):
            await blocks.attach("team", "b")
        restored = await blocks.undo("team")
        assert (restored.value, restored.attached) == ("we ship on Fridays", ("a",))
        assert [b.label for b in await blocks.list_blocks(agent_id="a")] == ["team"]

    async def test_undo_and_redo_of_a_rename_restore_the_label(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("old", "v"), agent_id="a")
        await blocks.rename("old", "new", agent_id="a")
        back = await blocks.undo("new", agent_id="a")
        assert (back.label, back.version) == ("old", 3)
        assert await blocks.find("new", agent_id="a") is None
        assert (await blocks.redo("old", agent_id="a")).label == "new"
        assert (await blocks.undo("new", agent_id="a")).label == "old"
        await blocks.create(MemoryBlock("new", "another"), agent_id="a")
        with pytest.raises(BlockExistsError, match="'new'"):
            await blocks.redo("old", agent_id="a")  # the label is taken now: nothing is written
        assert (await blocks.get("old", agent_id="a")).version == 5
        assert [v.label for v in await blocks.history("old", agent_id="a")] == [
            "old",
            "new",
            "old",
            "new",
            "old",
        ]

    async def test_replace_needs_one_occurrence(self, blocks: BlockStore) -> None:
        await blocks.create(MemoryBlock("h", "ab ab"))
        with pytest.raises(BlockInputError, match="appears 2 times"):
            await blocks.replace("h", "ab", "x")
        with pytest.raises(BlockInputError, match="does not appear"):
            await blocks.replace("h", "zz", "x")
        with pytest.raises(BlockInputError, match="insert_line 5"):
            await blocks.insert("h", "x", 5)
        assert len(await blocks.history("h")) == 1
