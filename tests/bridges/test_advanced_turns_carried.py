"""AxioAdvancedSession's turns (``message_turns``) where another writer touched the session: turns
the plain session appended to an indexed session are found (both backends), and ``copy`` carries
the turn rows with their times, so usage recorded per turn still matches its turn after a copy
SQLite -> PostgreSQL -> SQLite, and between an encrypted and a plain PostgreSQL database."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from click.testing import CliRunner

from axio_context.backends import open_database
from axio_context.copying import copy_all
from axio_context_openai_agents import AxioAdvancedSession, AxioContextSession
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_sqlite.cli import cli
from tests.bridges.advanced_support import Result, turn
from tests.support.backends import Backend
from tests.support.postgres import new_database

KEY = bytes(range(32))


async def _numbers(session: AxioAdvancedSession, branch: str | None = None) -> list[tuple[int, str]]:
    return [(t["turn"], t["content"]) for t in await session.get_conversation_turns(branch)]


async def test_turns_the_plain_session_appends_to_an_indexed_session_are_found(backend_db: Backend) -> None:
    where = backend_db.where
    session = AxioAdvancedSession("adv", where)
    plain = AxioContextSession("adv", where)
    try:
        await session.add_items(turn(1))
        assert await _numbers(session) == [(1, "question 1")]
        await plain.add_items(turn(2))  # knows nothing of turns
        assert await _numbers(session) == [(1, "question 1"), (2, "question 2")]
        await plain.add_items(turn(3))
        await session.add_items(turn(4))  # numbered after the plain session's turn 3
        await session.store_run_usage(Result(7))  # type: ignore[arg-type]
        assert [n for n, _ in await _numbers(session)] == [1, 2, 3, 4]
        assert (await session.get_turn_usage(4))["input_tokens"] == 7  # type: ignore[call-overload]
        await plain.add_items([*turn(5), {"role": "user", "content": "question 6"}])
        fresh = AxioAdvancedSession("adv", where)  # a new object finds them at its first look
        try:
            assert [n for n, _ in await _numbers(fresh)] == [1, 2, 3, 4, 5, 6]
            assert await fresh.create_branch_from_turn(5, "b") == "b"
            assert await _numbers(fresh) == [(n, f"question {n}") for n in range(1, 5)]
        finally:
            fresh.close()
        assert await plain.pop_item() == {"role": "user", "content": "question 6"}
        await plain.add_items([{"role": "user", "content": "question 7"}])  # at the popped place
        assert await _numbers(session) == [(n, f"question {q}") for n, q in enumerate((1, 2, 3, 4, 5, 7), 1)]
        assert (await session.get_turn_usage(4))["input_tokens"] == 7  # type: ignore[call-overload]
    finally:
        plain.close()
        session.close()


async def _fill(where: str) -> None:
    session = AxioAdvancedSession("adv", where)
    try:
        for i in (1, 2, 3):
            await session.add_items(turn(i))
            await session.store_run_usage(Result(10 * i))  # type: ignore[arg-type]
        await session.create_branch_from_turn(2, "b")
        await session.add_items(turn(9))
        await session.store_run_usage(Result(90))  # type: ignore[arg-type]
    finally:
        session.close()
    plain = AxioContextSession("plain", where)  # indexed by the advanced session at its first look
    await plain.add_items(turn(1))
    plain.close()


async def _reads(where: str) -> dict[str, Any]:
    """What the advanced session reads of the sessions :func:`_fill` wrote (times included)."""
    session = AxioAdvancedSession("adv", where)
    try:
        return {
            "turns": await session.get_conversation_turns("main"),
            "branch_turns": await session.get_conversation_turns("b"),
            "usage": await session.get_turn_usage(branch_id="main"),
            "branch_usage": await session.get_turn_usage(branch_id="b"),
            "turn_2": await session.get_turn_usage(2, branch_id="main"),
            "all": await session.get_session_usage(),
        }
    finally:
        session.close()


async def _copy(src: str, dst: str, src_key: bytes | None = None, dst_key: bytes | None = None) -> Any:
    async with open_database(src, key=src_key) as a, open_database(dst, key=dst_key) as b:
        return await copy_all(a, b)


@pytest.fixture
def pg_urls(pg_server: EmbeddedServer) -> tuple[str, str]:
    return new_database(pg_server, "axio_turns_copy"), new_database(pg_server, "axio_turns_copy")


async def test_a_copy_to_postgresql_and_back_keeps_the_turns_and_their_usage(
    pg_urls: tuple[str, str], tmp_path: Path
) -> None:
    src = str(tmp_path / "src.db")
    await _fill(src)
    before = await _reads(src)
    assert [u["user_turn_number"] for u in before["usage"]] == [1, 2, 3]
    assert [u["user_turn_number"] for u in before["branch_usage"]] == [2]  # its own turn 2
    first = await _copy(src, pg_urls[0])
    # main: 3 turns; the branch: turn 1 and its own; plain: 1 (not indexed yet: none to carry)
    assert (first.layers["turns"].copied, first.layers["turns"].conflicts) == (5, [])
    assert await _reads(pg_urls[0]) == before
    again = await _copy(src, pg_urls[0])
    assert (again.layers["turns"].copied, again.layers["turns"].already) == (0, 5)
    back = tmp_path / "back.db"  # and back, through the command line
    result = await asyncio.to_thread(
        CliRunner().invoke, cli, ["copy", pg_urls[0], str(back)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert await _reads(str(back)) == before
    plain = AxioAdvancedSession("plain", str(back))
    try:
        assert [n for n, _ in await _numbers(plain)] == [1]
    finally:
        plain.close()


async def test_a_copy_between_an_encrypted_and_a_plain_database_opens_and_seals_turns(
    pg_urls: tuple[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plain_url, sealed_url = pg_urls
    await _fill(plain_url)
    before = await _reads(plain_url)
    report = await _copy(plain_url, sealed_url, dst_key=KEY)
    assert (report.layers["turns"].copied, report.conflicts) == (5, [])
    conn = await asyncpg.connect(sealed_url)
    try:
        stored = [r[0] for r in await conn.fetch("SELECT content FROM message_turns")]
    finally:
        await conn.close()
    assert stored and not any("question" in s for s in stored)
    monkeypatch.setenv("AXIO_CONTEXT_KEY", KEY.hex())
    assert await _reads(sealed_url) == before
    monkeypatch.delenv("AXIO_CONTEXT_KEY")
    back = str(tmp_path / "back.db")  # and back into a plain file, opened
    report = await _copy(sealed_url, back, src_key=KEY)
    assert (report.layers["turns"].copied, report.conflicts) == (5, [])
    assert await _reads(back) == before
