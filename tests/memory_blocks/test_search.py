"""The main ``search`` takes memory blocks in (their current values), beside the messages, on
every backend through the registry, as the command line and the MCP server call it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from axio_context import Message
from axio_context.backends.registry import open_database
from axio_context.blocks import TextBlock
from axio_context.memory_blocks import BlockStore, MemoryBlock
from axio_context.memory_blocks.searching import SNIPPET_CHARS, find_blocks


async def _seed(where: str) -> None:
    async with open_database(where) as db:
        await db.store("s1", project="/p").append(
            Message(role="user", content=[TextBlock(text="I like green tea")])
        )
        blocks = db.memory_stores().blocks()
        await blocks.create(
            MemoryBlock("human", "Likes GREEN\n  tea, and cake", description="the user"), agent_id="a"
        )
        await blocks.create(MemoryBlock("persona", "A helpful assistant"), agent_id="b")
        await blocks.create(MemoryBlock("tea", "green is best", description="on tea"))


async def test_keyword_search_reports_blocks_beside_messages(axio_database_location: str) -> None:
    await _seed(axio_database_location)
    async with open_database(axio_database_location) as db:
        results = await db.search("green tea", mode="keyword")
        assert [(h.kind, h.session_id) for h in results.hits] == [("message", "s1")]
        assert [(b.kind, b.label, b.agent_id, b.version) for b in results.blocks] == [
            ("block", "tea", "", 1),  # named for a word: its label counts more
            ("block", "human", "a", 1),
        ]
        human = results.blocks[1]
        assert human.marked() == "Likes [GREEN] [tea], and cake"  # whitespace collapsed
        assert human.description == "the user" and human.updated_at
        as_json = msgspec.to_builtins(results)
        assert [b["kind"] for b in as_json["blocks"]] == ["block", "block"]
        assert as_json["hits"][0]["kind"] == "message"
        hybrid = await db.search("green tea", mode="hybrid")
        assert [b.label for b in hybrid.blocks] == ["tea", "human"]


async def test_block_search_follows_the_agent_and_the_current_value(axio_database_location: str) -> None:
    await _seed(axio_database_location)
    async with open_database(axio_database_location) as db:
        blocks = db.memory_stores().blocks()
        assert [b.label for b in (await db.search("green", mode="keyword", agent_id="a")).blocks] == ["human"]
        await blocks.attach("tea", "a")
        seen = await db.search("green", mode="keyword", agent_id="a")
        assert [(b.label, b.attached) for b in seen.blocks] == [("human", ()), ("tea", ("a",))]
        await blocks.set("human", "Prefers coffee", agent_id="a")
        assert [b.label for b in (await db.search("green", mode="keyword")).blocks] == ["tea"]
        [hit] = (await db.search("coffee", mode="keyword")).blocks
        assert (hit.label, hit.version) == ("human", 2)
        assert await db.search("helpful", mode="keyword", k=1) == []  # no message, one block
        assert len((await db.search("helpful", mode="keyword", k=1)).blocks) == 1
        later = datetime.now(UTC) + timedelta(days=1)
        assert (await db.search("green", mode="keyword", since=later)).blocks == []


async def test_which_searches_take_blocks(axio_database_location: str) -> None:
    await _seed(axio_database_location)
    async with open_database(axio_database_location) as db:
        assert (await db.search("green", mode="keyword", blocks=False)).blocks == []
        for scoped in ({"session_id": "s1"}, {"role": "user"}, {"project": "/p"}, {"raw": True}):
            found = await db.search("green", mode="keyword", **scoped)
            assert found.blocks == [], scoped
            with pytest.raises(ValueError, match=r"blocks=True: a .* (filter|query)"):
                await db.search("green", mode="keyword", blocks=True, **scoped)
        with pytest.raises(ValueError, match="no embeddings: search them in keyword or hybrid mode"):
            await db.search("green", mode="semantic", blocks=True)
        assert (await db.search("green", mode="keyword", blocks=True)).blocks
        with pytest.raises(ValueError, match="blocks must be True, False or None, not 'yes'"):
            await db.search("green", mode="keyword", blocks="yes")  # type: ignore[arg-type]


async def test_a_long_value_gives_a_cut_snippet_around_the_match(axio_database_location: str) -> None:
    async with open_database(axio_database_location) as db:
        value = "filler " * 60 + "the lighthouse keeper " + "more " * 60
        await db.memory_stores().blocks().create(MemoryBlock("notes", value))
        [hit] = (await db.search("LIGHTHOUSE", mode="keyword")).blocks
        assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
        assert len(hit.snippet) <= SNIPPET_CHARS + 2
        [(a, b)] = hit.highlights
        assert hit.snippet[a:b] == "lighthouse"


async def test_a_word_with_a_capital_beyond_ascii_is_found_in_any_case(axio_database_location: str) -> None:
    """SQLite's LOWER folds A-Z only: the block store matches such words as the in-memory one."""
    async with open_database(axio_database_location) as db:
        blocks = db.memory_stores().blocks()
        await blocks.create(MemoryBlock("Überblick", "Straße nach ÅRHUS"), agent_id="a")
        await blocks.create(MemoryBlock("other", "nothing here"), agent_id="a")
        for words in ("Überblick", "überblick", "ÜBERBLICK", "århus", "Århus straße"):
            assert [b.label for b in await blocks.search(words, agent_id="a")] == ["Überblick"], words
            assert [b.label for b in await blocks.search(words)] == ["Überblick"], words
        assert await blocks.search("Åarhus") == []
        [hit] = (await db.search("århus", mode="keyword")).blocks
        assert hit.marked() == "Straße nach [ÅRHUS]"


async def test_find_blocks_ranks_and_marks_them(axio_database_location: str) -> None:
    async with open_database(axio_database_location) as db:
        await _find_blocks_ranks_and_marks_them(db.memory_stores().blocks())


async def _find_blocks_ranks_and_marks_them(blocks: BlockStore) -> None:
    await blocks.create(MemoryBlock("human", "Likes green tea"), agent_id="a")
    await blocks.create(MemoryBlock("tea", "green"), agent_id="b")
    hits = await find_blocks(blocks, "GREEN tea", k=10)
    assert [(h.label, h.agent_id, h.marked()) for h in hits] == [
        ("tea", "b", "[green]"),
        ("human", "a", "Likes [green] [tea]"),
    ]
    assert [h.label for h in await find_blocks(blocks, "green", k=10, agent_id="a")] == ["human"]
    assert await find_blocks(blocks, "  ", k=10) == []
