"""The PostgreSQL history provider beyond the contract: the same sessions PostgresContextStore
reads, pages that read only their rows, clear_run across forks, pop and clear, run ids across
providers, many writers on one thread, and bad input."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator

import pytest

from axio_context.agents import HistoryProvider, RunSessionError
from axio_context.errors import CorruptDataError
from axio_context.messages import Message
from axio_context.testing import text
from axio_context_postgres import Pool, PostgresContextStore, ServerUnavailableError, connect
from axio_context_postgres.agents import PostgresHistoryProvider

TABLES = (
    "hidden_messages, message_runs, agent_runs, agent_sessions, checkpoints, messages, sessions, segments"
)


def _turns(prefix: str, n: int) -> list[Message]:
    return [text("user" if i % 2 == 0 else "assistant", f"{prefix}{i}") for i in range(n)]


def _texts(messages: list[Message]) -> list[str]:
    return [getattr(m.content[0], "text", "?") for m in messages]


@pytest.fixture
async def pool(pg_url: str) -> AsyncIterator[Pool]:
    p = await connect(pg_url, min_size=1, max_size=8)
    try:
        await p.execute(f"TRUNCATE {TABLES} CASCADE")
        yield p
    finally:
        await p.close()


@pytest.fixture
def provider(pool: Pool) -> PostgresHistoryProvider:
    return PostgresHistoryProvider(pool, project="p")


def test_it_is_a_history_provider_method_for_method() -> None:
    """isinstance against the runtime Protocol only checks that the names exist; each method must
    also take what the protocol's takes (the contract suite, test_agents_contract.py, runs them)."""
    members = [
        n for n in vars(HistoryProvider) if not n.startswith("_") and callable(getattr(HistoryProvider, n))
    ]
    assert set(members) == {"append", "append_many", "get_messages", "clear", "clear_run", "count_messages"}
    for name in members:
        want = inspect.signature(getattr(HistoryProvider, name))
        got = inspect.signature(getattr(PostgresHistoryProvider, name))
        shape = [(p.name, p.kind, p.default) for p in want.parameters.values()]
        assert [(p.name, p.kind, p.default) for p in got.parameters.values()] == shape, name
        assert inspect.iscoroutinefunction(getattr(PostgresHistoryProvider, name)) == (
            inspect.iscoroutinefunction(getattr(HistoryProvider, name))
        ), name


async def test_agent_history_is_an_ordinary_session(pool: Pool, provider: PostgresHistoryProvider) -> None:
    await provider.append("bot", text("user", "q"), session_id="t")
    await provider.append_many("bot", _turns("r", 2), session_id="t", run_id="r1")
    await provider.append("", text("user", "plain"), session_id="t")
    store = await provider.store("bot", "t")
    assert store.session_id == "t:bot"
    assert await provider.session_key("", "t") == "t"
    assert _texts(await store.get_history()) == ["q", "r0", "r1"]
    assert (await store.info()).project == "p"
    # A plain store of the same session id is the same conversation, both ways.
    await PostgresContextStore(pool, "t:bot", "p").append(text("assistant", "via store"))
    assert _texts(await provider.get_messages("bot", session_id="t")) == ["q", "r0", "r1", "via store"]
    assert await provider.get_run_ids("bot", session_id="t") == ["", "r1", "r1", ""]
    await provider.clear_run("bot", session_id="t", run_id="r1")
    assert _texts(await provider.get_messages("bot", session_id="t")) == ["q", "via store"]
    assert await provider.get_run_ids("bot", session_id="t") == ["", ""]
    # Deleting the session takes the agent's rows with it: the next append starts afresh.
    assert await store.delete_session()
    assert await provider.count_messages("bot", session_id="t") == 0
    await provider.append("bot", text("user", "again"), session_id="t")
    assert _texts(await store.get_history()) == ["again"]


async def test_a_page_reads_only_its_rows(pool: Pool, provider: PostgresHistoryProvider) -> None:
    for i in range(0, 300, 50):
        await provider.append_many("a", _turns(f"b{i}-", 50), session_id="t")
    # Damage positions 0..63: only a read of them can notice.
    await pool.execute("UPDATE messages SET payload = '\\xc1'::bytea WHERE position < 64")
    page = await provider.get_messages("a", session_id="t", limit=50, offset=200)
    assert _texts(page) == [f"b200-{i}" for i in range(50)]
    assert await provider.count_messages("a", session_id="t") == 300
    with pytest.raises(CorruptDataError, match="message 0 of session 't:a'"):
        await provider.get_messages("a", session_id="t")


async def test_ids_that_do_not_fit_get_a_hashed_session(provider: PostgresHistoryProvider) -> None:
    await provider.append("b", text("user", "1"), session_id="a:x")  # session "a:x:b"
    await provider.append("x:b", text("user", "2"), session_id="a")  # would also be "a:x:b"
    long = "t" * 256
    await provider.append("bot", text("user", "3"), session_id=long)
    keys = [await provider.session_key(*k) for k in (("b", "a:x"), ("x:b", "a"), ("bot", long))]
    assert keys[0] == "a:x:b" and keys[1].startswith("agent-") and keys[2].startswith("agent-")
    assert _texts(await provider.get_messages("x:b", session_id="a")) == ["2"]
    assert _texts(await provider.get_messages("bot", session_id=long)) == ["3"]


async def test_clear_run_and_forks(pool: Pool, provider: PostgresHistoryProvider) -> None:
    await provider.append("a", text("user", "keep"), session_id="t")
    await provider.append_many("a", _turns("run", 3), session_id="t", run_id="r")
    store = await provider.store("a", "t")
    before = await store.fork()
    await provider.clear_run("a", session_id="t", run_id="r")
    after = await store.fork()
    marks = "SELECT count(*) FROM hidden_messages h JOIN sessions s ON s.sid = h.sid WHERE s.id = $1"
    assert await pool.fetchval(marks, before.session_id) == 0  # made before: sees the run
    assert await pool.fetchval(marks, after.session_id) == 3  # made after: inherits the marks
    assert _texts(await before.get_history()) == ["keep", "run0", "run1", "run2"]
    # The parent's positions did not move: the next append is position 4 (the three hidden ones
    # are not counted).
    await provider.append("a", text("user", "next"), session_id="t")
    assert (await store.info()).message_count == 2
    assert _texts(await provider.get_messages("a", session_id="t")) == ["keep", "next"]
    assert _texts(await provider.get_messages("a", session_id="t", offset=1)) == ["next"]
    # Deleting the parent keeps the fork's rows (and its tags).
    assert await store.delete_session()
    assert _texts(await before.get_history()) == ["keep", "run0", "run1", "run2"]


async def test_clear_and_pop_free_hidden_positions(pool: Pool, provider: PostgresHistoryProvider) -> None:
    await provider.append_many("a", _turns("r", 2), session_id="t", run_id="r")
    await provider.clear_run("a", session_id="t", run_id="r")
    store = await provider.store("a", "t")
    await store.pop()
    await provider.append("a", text("user", "reused position 1"), session_id="t")
    assert _texts(await provider.get_messages("a", session_id="t")) == ["reused position 1"]
    assert await provider.get_run_ids("a", session_id="t") == [""]
    await provider.clear("a", session_id="t")
    assert await pool.fetchval("SELECT count(*) FROM hidden_messages") == 0
    assert await pool.fetchval("SELECT count(*) FROM message_runs") == 0  # rows freed with their tags
    await provider.append("a", text("user", "fresh"), session_id="t")
    assert _texts(await provider.get_messages("a", session_id="t")) == ["fresh"]


async def test_runs_are_one_threads_across_providers(pg_url: str, provider: PostgresHistoryProvider) -> None:
    await provider.append_many("a", _turns("r", 2), session_id="t", run_id="r1")
    await provider.clear_run("a", session_id="t", run_id="r1")
    other = await PostgresHistoryProvider.open(pg_url, project="p")  # its own pool, no cache
    try:
        assert await other.count_messages("a", session_id="t") == 0
        with pytest.raises(RunSessionError, match="run_id 'r1' belongs to session 't', not 'u'"):
            await other.append_many("a", _turns("x", 3), session_id="u", run_id="r1")
        assert await other.count_messages("a", session_id="u") == 0
        await other.append("b", text("user", "same thread"), session_id="t", run_id="r1")
        assert await provider.get_run_ids("b", session_id="t") == ["r1"]
    finally:
        await other.close()
    await other.close()  # twice: no-op


async def test_many_writers_on_one_thread_keep_order_and_tags(provider: PostgresHistoryProvider) -> None:
    async def writer(w: int) -> None:
        for i in range(25):
            await provider.append_many("a", _turns(f"w{w}-{i}-", 2), session_id="t", run_id=f"run{w}")

    await asyncio.gather(*(writer(w) for w in range(8)))  # 8 connections racing on the new thread
    got = _texts(await provider.get_messages("a", session_id="t"))
    runs = await provider.get_run_ids("a", session_id="t")
    assert len(got) == 400 and len(set(got)) == 400
    for w in range(8):  # each writer's messages in its order, each pair kept together, tagged right
        mine = [(g, r) for g, r in zip(got, runs, strict=True) if g.startswith(f"w{w}-")]
        assert [g for g, _ in mine] == [f"w{w}-{i}-{j}" for i in range(25) for j in range(2)]
        assert {r for _, r in mine} == {f"run{w}"}
    assert all(got[k][:-1] == got[k + 1][:-1] for k in range(0, 400, 2))
    await asyncio.gather(*(provider.clear_run("a", session_id="t", run_id=f"run{w}") for w in range(0, 8, 2)))
    assert await provider.count_messages("a", session_id="t") == 200
    assert await provider.session_key("a", "t") == "t:a"


async def test_bad_input_is_refused_before_anything_is_written(provider: PostgresHistoryProvider) -> None:
    await provider.append("a", text("user", "before"), session_id="t")
    with pytest.raises(ValueError, match="session_id must not contain a NUL"):
        await provider.append("a", text("user", "x"), session_id="t\x00")
    with pytest.raises(ValueError, match="agent_id must not contain a NUL"):
        await provider.get_messages("a\x00", session_id="t")
    with pytest.raises(ValueError, match="run_id must not contain a NUL"):
        await provider.append("a", text("user", "x"), session_id="t", run_id="r\x00")
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        await provider.append_many("a", [text("user", "ok"), "not a message"], session_id="t")  # type: ignore[list-item]
    assert _texts(await provider.get_messages("a", session_id="t")) == ["before"]


async def test_a_server_that_is_down_is_one_named_error() -> None:
    with pytest.raises(ServerUnavailableError, match="cannot reach the server"):
        await PostgresHistoryProvider.open("postgresql://nobody@127.0.0.1:9/nowhere")


async def test_a_nul_in_a_threads_first_user_text_is_stored_and_read_back_whole(
    pool: Pool, provider: PostgresHistoryProvider
) -> None:
    # The thread exists (an assistant's message first: no preview yet), so the user's text goes
    # the one-statement way; PostgreSQL text cannot hold NUL: the preview gets a space, the
    # message is whole (as PostgresContextStore's append does).
    await provider.append("bot", text("assistant", "hello"), session_id="nul")
    await provider.append("bot", text("user", "a\x00b"), session_id="nul")
    assert _texts(await provider.get_messages("bot", session_id="nul")) == ["hello", "a\x00b"]
    key = await provider.session_key("bot", "nul")
    assert await pool.fetchval("SELECT preview FROM sessions WHERE id = $1", key) == "a b"
