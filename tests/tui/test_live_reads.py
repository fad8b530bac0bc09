"""The library reads the browser and ``show --follow`` stand on: session trees by page, transcript
windows, ``data_version`` and following a session (real SQLite files, two real connections), each
on SQLite and on PostgreSQL (:class:`~axio_context_postgres.browsing.PostgresBrowser`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from axio_context import Checkpoint
from axio_context.errors import SessionNotFoundError
from axio_context.testing import text
from axio_context_sqlite.admin.live import Browsable
from axio_context_sqlite.database import FollowUpdate
from axio_context_sqlite.store.browsing import MAX_PAGE
from axio_context_sqlite.tui.core import open_browsable
from tests.support.backends import Backend


@asynccontextmanager
async def browsing(backend: Backend) -> AsyncIterator[Browsable]:
    """The browser's reads on ``backend``'s database, over a connection of their own."""
    async with open_browsable(backend.where, busy_timeout=5.0) as db:
        yield db


async def _forest(backend: Backend) -> None:
    """root-a (oldest) with a fork and a fork of the fork, root-b in another project, root-c."""
    async with backend.open():
        a = backend.store("root-a", project="alpha")
        await a.append(text("user", "apples and pears"))
        fork = await a.fork()
        await fork.append(text("user", "more apples"))
        deeper = await fork.fork()
        await deeper.append(text("user", "deeper"))
        b = backend.store("root-b", project="beta")
        await b.append(text("user", "bananas"))
        c = backend.store("root-c", project="alpha")
        await c.append(text("user", "cherries"))
        await c.set_title("Cherry title")


async def test_session_tree_pages_heads_newest_first_with_forks_under_their_parent(
    backend_db: Backend,
) -> None:
    await _forest(backend_db)
    async with browsing(backend_db) as db:
        first = await db.session_tree(limit=2)
        assert [(r.info.session_id, r.depth) for r in first.rows] == [("root-c", 0), ("root-b", 0)]
        assert first.next_cursor is not None
        rest = await db.session_tree(limit=2, cursor=first.next_cursor)
        assert [r.depth for r in rest.rows] == [0, 1, 2]
        assert rest.rows[0].info.session_id == "root-a"
        assert rest.rows[1].info.parent_id == "root-a"
        assert rest.rows[2].info.parent_id == rest.rows[1].info.session_id
        assert rest.next_cursor is None
        alpha = await db.session_tree("alpha")
        assert [r.info.session_id for r in alpha.rows if r.depth == 0] == ["root-c", "root-a"]


async def test_session_tree_text_filter_is_flat_and_matches_id_title_and_preview(backend_db: Backend) -> None:
    await _forest(backend_db)
    async with browsing(backend_db) as db:
        by_title = await db.session_tree(text="cherry TITLE")
        assert [r.info.session_id for r in by_title.rows] == ["root-c"]
        by_preview = await db.session_tree(text="apples")  # the root and both forks share it
        assert len(by_preview.rows) == 3 and all(r.depth == 0 for r in by_preview.rows)
        assert {r.info.parent_id for r in by_preview.rows} >= {"root-a"}
        assert (await db.session_tree(text="100%_")).rows == []  # % and _ are literal
        with pytest.raises(ValueError, match="limit must be between"):
            await db.session_tree(limit=MAX_PAGE + 1)
        with pytest.raises(ValueError, match="cursor"):
            await db.session_tree(cursor="nonsense")


async def test_a_forks_head_is_itself_when_its_parent_is_deleted(backend_db: Backend) -> None:
    await _forest(backend_db)
    async with browsing(backend_db) as db:
        assert await db.delete(["root-a"]) == ["root-a"]
        heads = [r for r in (await db.session_tree()).rows if r.depth == 0]
        assert len(heads) == 3  # root-c, root-b and the orphaned fork (its own fork under it)


async def test_transcript_reads_only_the_window_and_keeps_the_summary(backend_db: Backend) -> None:
    async with backend_db.open():
        s = backend_db.store("long", project="p")
        await s.append_many([text("user", f"message {i}") for i in range(30)])
        await s.add_checkpoint(Checkpoint(position=10, summary=[text("user", "the first ten")]))
    async with browsing(backend_db) as db:
        view = await db.transcript("long", limit=5)
        assert view.start == 25 and len(view.messages) == 5
        assert view.summary is not None and view.summary[0].text == "the first ten"
        whole_view = await db.transcript("long", limit=100)
        assert whole_view.start == 10  # the model's view starts at the checkpoint
        full = await db.transcript("long", full=True, limit=100)
        assert full.start == 0 and full.summary is None and len(full.messages) == 30
        count, window = await db.messages("long", 3, 6)
        assert count == 30 and [m.content[0].text for m in window] == ["message 3", "message 4", "message 5"]  # type: ignore[union-attr]
        with pytest.raises(SessionNotFoundError):
            await db.transcript("nope")


async def test_data_version_moves_on_another_connections_commit_only(backend_db: Backend) -> None:
    async with backend_db.open(), browsing(backend_db) as db:
        writer = backend_db.store("s", project="p")
        await writer.append(text("user", "one"))
        before = await db.data_version()
        assert await db.data_version() == before  # nothing committed: no change
        await writer.append(text("user", "two"))
        assert await db.data_version() != before


async def test_follow_yields_appends_and_a_reset_when_the_session_is_rewritten(backend_db: Backend) -> None:
    async with backend_db.open(), browsing(backend_db) as db:
        writer = backend_db.store("s", project="p")
        await writer.append(text("user", "one"))
        stream = db.follow("s", 1, interval=0.01)
        try:
            task = asyncio.ensure_future(stream.__anext__())
            await writer.append_many([text("assistant", "two"), text("user", "three")])
            update = await asyncio.wait_for(task, 30)
            assert isinstance(update, FollowUpdate) and update.start == 1 and not update.reset
            assert [m.role for m in update.messages] == ["assistant", "user"]
            await writer.clear()
            await writer.append(text("user", "again"))
            reset = await asyncio.wait_for(stream.__anext__(), 30)
            assert reset.reset and reset.start == 0
            assert [m.content[0].text for m in reset.messages] == ["again"]  # type: ignore[union-attr]
        finally:
            await stream.aclose()
        with pytest.raises(ValueError, match="interval"):
            await db.follow("s", 0, interval=0).__anext__()
