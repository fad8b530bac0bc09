"""Every documented limit at its edge: N allowed, N+1 refused, through the public API.

The numbers are written here as the docs state them, not read from the code's constants, and each
test first checks that its doc still says so: a bound that moves by one in the code fails here,
and so does a doc that stops stating it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axio_context import Message, ToolUseBlock
from axio_context.errors import DecodeError, SearchQueryError
from axio_context.memory.errors import BlobKeyError, BlobTooLargeError
from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.errors import SessionIdError
from axio_context_sqlite.memory import SQLiteBlobStore

from .markdown_blocks import ROOT


def says(doc: str, phrase: str) -> None:
    """The doc states the limit in these words (whitespace folded: lines wrap anywhere)."""
    body = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
    assert phrase in body, f"{doc} no longer says {phrase!r}"


# --- search queries: docs/faults.md -----------------------------------------------------------

SEARCH_LIMITS = (
    "a query past the limits (2,000 characters, 32 words, "
    "a word repeated more than 4 times, more than 8 prefixes)"
)

#: (limit, the longest query allowed, the same one step past it)
QUERY_EDGES = {
    "characters": ("x" * 2_000, "x" * 2_001),
    "words": (" ".join(f"w{i}" for i in range(32)), " ".join(f"w{i}" for i in range(33))),
    "repeats": ("echo " * 4 + "other", "echo " * 5 + "other"),
    "prefixes": (" ".join(f"{c}*" for c in "abcdefgh"), " ".join(f"{c}*" for c in "abcdefghi")),
}


@pytest.fixture
async def searchable(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text("user", "echo the parser crash"))
    return path


@pytest.mark.parametrize("limit", list(QUERY_EDGES))
async def test_a_search_query_at_each_limit_runs_and_one_past_it_is_refused(
    limit: str, searchable: Path
) -> None:
    says("docs/faults.md", SEARCH_LIMITS)
    at, past = QUERY_EDGES[limit]
    async with open_database(searchable) as db:
        for raw in (False, True):
            await db.search(at, mode="keyword", raw=raw)
            for mode in ("keyword", "semantic", "hybrid"):
                with pytest.raises(SearchQueryError, match="the limit is"):
                    await db.search(past, mode=mode, raw=raw)


async def test_the_word_limit_counts_words_not_operators_in_a_raw_query(searchable: Path) -> None:
    """A raw query's AND/OR/NOT/NEAR are not words: 32 words joined by 31 ORs are allowed."""
    async with open_database(searchable) as db:
        await db.search(" OR ".join(f"w{i}" for i in range(32)), mode="keyword", raw=True)
        with pytest.raises(SearchQueryError, match="33 words"):
            await db.search(" OR ".join(f"w{i}" for i in range(33)), mode="keyword", raw=True)


# --- nesting depth: docs/faults.md ------------------------------------------------------------


def nested(depth: int) -> dict[str, Any]:
    """A mapping ``depth`` containers deep (the mapping itself, a tool input, is level 1)."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


async def test_a_tool_input_nested_100_levels_is_stored_and_101_refused(tmp_path: Path) -> None:
    says("docs/faults.md", "nesting deeper than 100 levels")
    async with connect(tmp_path / "n.db") as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        deep = Message(role="assistant", content=[ToolUseBlock(id="t", name="f", input=nested(100))])
        await store.append(deep)
        assert await store.get_history() == [deep]
        too_deep = Message(role="assistant", content=[ToolUseBlock(id="t", name="f", input=nested(101))])
        with pytest.raises(DecodeError, match="nests more than 100 levels deep"):
            await store.append(too_deep)
        assert len(await store.get_history()) == 1  # nothing written


# --- ids: docs/faults.md and docs/agents.md -----------------------------------------------------


async def test_a_session_id_of_256_characters_is_accepted_and_257_refused(tmp_path: Path) -> None:
    says("docs/faults.md", "a session id over 256 characters | `SessionIdError`")
    async with connect(tmp_path / "i.db") as conn:
        for id_ in ("x" * 256, "é" * 256):  # characters, not bytes
            await SQLiteContextStore(conn, id_, project="p").append(text("user", "kept"))
        for id_ in ("x" * 257, "é" * 257):
            with pytest.raises(SessionIdError):
                await SQLiteContextStore(conn, id_, project="p").append(text("user", "refused"))
        listed = await SQLiteContextStore(conn, "q", project="p").list_sessions()
        assert sorted(len(s.session_id) for s in listed) == [256, 256]


async def test_an_agent_conversation_named_up_to_256_characters_keeps_its_name(tmp_path: Path) -> None:
    """Past 256 characters the readable name ``<session>:<agent>`` gives way to a hash."""
    says("docs/agents.md", "or is longer than 256 characters")
    async with connect(tmp_path / "a.db") as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        fits, over = "t" * 252, "t" * 253  # + ":bot" = 256 and 257 characters
        await provider.append("bot", text("user", "1"), session_id=fits)
        await provider.append("bot", text("user", "2"), session_id=over)
        assert await provider.session_key("bot", fits) == f"{fits}:bot"
        assert (await provider.session_key("bot", over)).startswith("agent-")


# --- blobs: docs/memory.md ----------------------------------------------------------------------


async def test_a_blob_key_of_1024_bytes_is_accepted_and_1025_refused(tmp_path: Path) -> None:
    says("docs/memory.md", "A key is 1 to 1,024 bytes of UTF-8 without NUL (`BlobKeyError`)")
    async with connect(tmp_path / "b.db") as conn:
        store = SQLiteBlobStore(conn)
        for key in ("k" * 1024, "é" * 512):  # bytes of UTF-8, not characters
            await store.upload(key, b"kept")
            assert (await store.download(key))[0] == b"kept"
        for key in ("k" * 1025, "é" * 512 + "k", ""):
            with pytest.raises(BlobKeyError):
                await store.upload(key, b"refused")
        assert len(await store.list_keys()) == 2


async def test_a_blob_of_max_size_bytes_is_stored_and_one_more_refused(tmp_path: Path) -> None:
    says(
        "docs/memory.md",
        "a blob larger than the store's `max_size` (default 512 MiB) is a `BlobTooLargeError`",
    )
    from axio_context.memory.blobs import DEFAULT_MAX_SIZE

    assert DEFAULT_MAX_SIZE == 512 * 1024 * 1024
    async with connect(tmp_path / "b.db") as conn:
        store = SQLiteBlobStore(conn, max_size=4096)
        await store.upload("k", b"x" * 4096)
        await store.upload_stream("s", [b"x" * 2048, b"x" * 2048])
        with pytest.raises(BlobTooLargeError):
            await store.upload("k", b"y" * 4097)
        with pytest.raises(BlobTooLargeError):
            await store.upload_stream("s", [b"y" * 2048, b"y" * 2049])
        assert (await store.download("k"))[0] == b"x" * 4096  # the key keeps what it held
        assert (await store.download("s"))[0] == b"x" * 4096
