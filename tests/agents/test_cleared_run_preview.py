"""A run cleared by RUN retention (``clear_run``) takes its text out of the session's preview
too (issue 30 item 15), on a SQLite file and on PostgreSQL: listings show the first message
still visible, or nothing."""

from __future__ import annotations

from typing import Any

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from tests.support.backends import Backend, backend, backend_db, backend_pg_url  # noqa: F401  (fixtures)


def user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def reply(text: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)])


def provider_on(db: Backend) -> Any:
    """The backend's history provider on the open handle."""
    if db.name == "sqlite":
        from axio_context_sqlite.agents import SQLiteHistoryProvider

        return SQLiteHistoryProvider(db.handle, project="p")
    from axio_context_postgres.agents import PostgresHistoryProvider

    return PostgresHistoryProvider(db.handle, project="p")


async def previews(provider: Any) -> dict[str, str]:
    store = await provider.store("support", "t1")
    return {s.session_id: s.preview for s in await store.list_sessions()}


async def test_a_cleared_run_leaves_the_preview(backend: Backend) -> None:  # noqa: F811
    provider = provider_on(backend)
    await provider.append_many(
        "support", [user("My invoice is wrong"), reply("Let me check")], session_id="t1", run_id="r1"
    )
    name = await provider.session_key("support", "t1")
    assert (await previews(provider))[name] == "My invoice is wrong"
    await provider.clear_run("support", session_id="t1", run_id="r1")
    assert "invoice" not in (await previews(provider))[name]
    await provider.append("support", user("Second question"), session_id="t1", run_id="r2")
    assert (await previews(provider))[name] == "Second question"


async def test_the_next_visible_user_message_becomes_the_preview(backend: Backend) -> None:  # noqa: F811
    provider = provider_on(backend)
    await provider.append("support", user("secret account 1234"), session_id="t1", run_id="r1")
    await provider.append_many("support", [reply("ok"), user("keep me")], session_id="t1", run_id="r2")
    await provider.clear_run("support", session_id="t1", run_id="r1")
    name = await provider.session_key("support", "t1")
    assert (await previews(provider))[name] == "keep me"
