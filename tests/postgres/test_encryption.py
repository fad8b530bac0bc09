"""Client-side encryption on PostgreSQL: with a key, what a user wrote reaches the server sealed
(AES-256-GCM), reads back whole through every layer, and every key that does not fit the
database is its own one-line error; rekey, encrypt and decrypt convert in one transaction."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import asyncpg
import pytest
from click.testing import CliRunner

from axio_context import Message, TextBlock
from axio_context.backends import open_database
from axio_context.copying import copy_all
from axio_context.encryption import EncryptionKeyError, KeyRequiredError, NotEncryptedError, WrongKeyError
from axio_context.errors import SearchQueryError
from axio_context.memory.graph import Entity
from axio_context.memory.vectors import Document
from axio_context.memory_blocks import MemoryBlock
from axio_context.pools import ContextItem
from axio_context.sealing import UnsealError
from axio_context.state import ResumableState
from axio_context_postgres import connect
from axio_context_postgres.agents import PostgresHistoryProvider
from axio_context_postgres.backend import BACKEND
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue
from axio_context_postgres.rekeying import AlreadyEncryptedError, convert_keys
from axio_context_postgres.state import load_state, save_state
from axio_context_postgres.store import PostgresContextStore
from axio_context_sqlite.cli import cli
from tests.cli.test_process import console_script  # noqa: F401 (a fixture)
from tests.support.postgres import new_database

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))
PLANTED = "PLANTEDzebra"


@pytest.fixture
def url(pg_server: EmbeddedServer) -> str:
    return new_database(pg_server, "axio_sealed")


@pytest.fixture
def plain_url(pg_server: EmbeddedServer) -> str:
    return new_database(pg_server, "axio_plain")


def _text(role: str, words: str) -> Message:
    return Message(role=role, content=[TextBlock(text=words)])  # type: ignore[arg-type]


async def _plant(url: str, key: bytes | None) -> None:
    """Write the planted word into every layer's payload (never into an id, key or label)."""
    async with open_database(url, key=key) as db:
        store = db.store("s1", project="/p")
        await store.append(_text("user", f"{PLANTED} message about the lighthouse"))
        await store.append(_text("assistant", f"{PLANTED} reply"))
        await store.set_metadata({"about": PLANTED})  # type: ignore[attr-defined]
        pool = db.pool  # type: ignore[attr-defined]
        assert isinstance(store, PostgresContextStore)
        await save_state(store, ResumableState(user_prompts=[f"{PLANTED} prompt"]))
        queue = await PostgresContextQueue.open(pool, "q", 10)
        await queue.append(ContextItem(content=f"{PLANTED} queued", description=f"{PLANTED} described"))
        ranked = await PostgresContextPool.open(pool, "p", 10)
        await ranked.add(
            ContextItem(content={"t": PLANTED}, description="about k", id="k1", extra={"x": PLANTED})
        )
        stores = db.memory_stores()
        await stores.vectors().add(
            [
                Document(
                    id="d1",
                    content=f"{PLANTED} doc",
                    embedding=[0.5, 0.25, 0.125, 1.0],
                    metadata={"m": PLANTED},
                )
            ]
        )
        await stores.blobs().upload("b1", f"{PLANTED} blob bytes".encode())
        await stores.blocks().create(
            MemoryBlock("persona", f"{PLANTED} block value", description=f"{PLANTED} d")
        )
        await stores.graph().add_entities([Entity("e1", "Thing", {"p": PLANTED})])
        board = await stores.tasks().create_task_list("c1", [f"{PLANTED} task"])
        await stores.tasks().update_status(board.id, board.tasks[0].id, "in_progress", f"{PLANTED} note")
        history = PostgresHistoryProvider(pool, project="/p")
        await history.append_many("agent", [_text("user", f"{PLANTED} to the agent")], session_id="t1")
        turns = BACKEND.turn_index(pool, project="/p")
        await turns.append("u1", [_text("user", "turn")], [(0, f'"{PLANTED} turn"')])


async def _dump(url: str) -> dict[str, str]:
    """Every user table's rows as text, read with raw asyncpg (no key, no opening)."""
    conn = await asyncpg.connect(url)
    try:
        tables = await conn.fetch(
            "SELECT quote_ident(table_name) FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
        out = {}
        for (name,) in tables:
            rows = await conn.fetch(f"SELECT t::text FROM {name} t")
            out[name] = "\n".join(r[0] for r in rows)
            # bytea shows as hex in the row text: look for the word's hex too
            out[name] += "\n" + "\n".join(
                bytes(v).decode("latin-1")
                for r in await conn.fetch(f"SELECT * FROM {name}")
                for v in r.values()
                if isinstance(v, bytes)
            )
        return out
    finally:
        await conn.close()


async def _read_back(url: str, key: bytes | None) -> None:
    async with open_database(url, key=key) as db:
        store = db.store("s1", project="/p")
        history = await store.get_history()
        assert [m.content[0].text for m in history] == [  # type: ignore[union-attr]
            f"{PLANTED} message about the lighthouse",
            f"{PLANTED} reply",
        ]
        assert isinstance(store, PostgresContextStore)
        assert await store.get_metadata() == {"about": PLANTED}
        state = await load_state(store)
        assert state is not None and state.user_prompts == [f"{PLANTED} prompt"]
        pool = db.pool  # type: ignore[attr-defined]
        queue = await PostgresContextQueue.open(pool, "q", create=False)
        items = queue.items
        assert [(i.content, i.description) for i in items] == [(f"{PLANTED} queued", f"{PLANTED} described")]
        ranked = await PostgresContextPool.open(pool, "p", create=False)
        got = ranked.get("k1")
        assert got.content == {"t": PLANTED} and got.extra == {"x": PLANTED}
        stores = db.memory_stores()
        (doc,) = await stores.vectors().get(["d1"])
        assert (doc.content, doc.metadata) == (f"{PLANTED} doc", {"m": PLANTED})
        data, _ = await stores.blobs().download("b1")
        assert data == f"{PLANTED} blob bytes".encode()
        block = await stores.blocks().get("persona")
        assert (block.value, block.description) == (f"{PLANTED} block value", f"{PLANTED} d")
        entity = await stores.graph().get_entity("e1")
        assert entity is not None and entity.properties == {"p": PLANTED}
        (board,) = await stores.tasks().list_task_lists()
        assert (board.tasks[0].title, board.tasks[0].note) == (f"{PLANTED} task", f"{PLANTED} note")
        info = await db.info("s1")
        assert PLANTED in (info.preview or "")
        said = await PostgresHistoryProvider(pool).get_messages("agent", session_id="t1")
        assert said[0].content[0].text == f"{PLANTED} to the agent"  # type: ignore[union-attr]
        turns = BACKEND.turn_index(pool)
        assert [t.content for t in await turns.turns("u1")] == [f'"{PLANTED} turn"']


async def test_nothing_planted_reaches_the_server_in_plaintext(url: str, plain_url: str) -> None:
    await _plant(plain_url, None)
    plain = await _dump(plain_url)
    assert any(PLANTED in text for text in plain.values())  # the control: a plain database shows it
    await _plant(url, KEY)
    for table, text in (await _dump(url)).items():
        assert PLANTED not in text and "lighthouse" not in text, table
    await _read_back(url, KEY)


async def test_keyword_search_is_one_line_and_meaning_is_searched(url: str) -> None:
    await _plant(url, KEY)
    async with open_database(url, key=KEY) as db:
        with pytest.raises(SearchQueryError, match="keyword search does not run on an encrypted"):
            await db.search("lighthouse", mode="keyword")
        words = _Words()
        report = await db.reindex(words)  # type: ignore[arg-type]
        assert report.embedded == 3  # the text comes from the opened payloads
        hits = await db.search("lighthouse", mode="semantic", embedder=words)  # type: ignore[arg-type]
        assert [h.position for h in hits.hits] == [0]
        assert hits.hits[0].snippet.startswith(f"{PLANTED} message")  # made from the opened payload
        hybrid = await db.search("lighthouse", embedder=words)  # type: ignore[arg-type]
        assert hybrid.fallback is not None and "encrypted" in hybrid.fallback


class _Words:
    """A tiny embedder: one dimension per word of a fixed list (deterministic, offline)."""

    model = "test-words"
    dimension = 4
    _words = ("lighthouse", "reply", "zebra", "message")

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(w in t.lower()) for w in self._words] for t in texts]


async def test_every_key_that_does_not_fit_is_one_line(url: str, plain_url: str) -> None:
    await _plant(url, KEY)
    plain = plain_url
    await _plant(plain, None)
    cases: list[tuple[str, bytes | str | None, type[Exception], str]] = [
        (url, None, KeyRequiredError, "is encrypted: give its key"),
        (url, OTHER, WrongKeyError, "the key does not open"),
        (plain, KEY, NotEncryptedError, "is not encrypted but a key was given"),
        (url, b"short", EncryptionKeyError, "must be 32 bytes, not 5"),
    ]
    for where, key, error, words in cases:
        with pytest.raises(error) as caught:
            async with open_database(where, key=key):
                pass
        message = str(caught.value)
        assert words in message and "\n" not in message
        assert KEY.hex() not in message and OTHER.hex() not in message


async def test_the_environment_key_opens_it(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    await _plant(url, KEY)
    monkeypatch.setenv("AXIO_CONTEXT_KEY", KEY.hex())
    pool = await connect(url)
    try:
        history = await PostgresContextStore(pool, "s1", "/p").get_history()
        assert len(history) == 2
    finally:
        await pool.close()


async def test_rekey_encrypt_and_decrypt_convert_every_payload(url: str) -> None:
    await _plant(url, KEY)
    await convert_keys(url, KEY, OTHER)
    with pytest.raises(WrongKeyError):
        async with open_database(url, key=KEY):
            pass
    await _read_back(url, OTHER)
    for table, text in (await _dump(url)).items():
        assert PLANTED not in text, table
    await convert_keys(url, OTHER, None)  # decrypt
    await _read_back(url, None)
    assert any(PLANTED in text for text in (await _dump(url)).values())
    async with open_database(url) as db:  # the keyword index is back
        assert len((await db.search("lighthouse", mode="keyword")).hits) == 1
    await convert_keys(url, None, KEY)  # encrypt
    for table, text in (await _dump(url)).items():
        assert PLANTED not in text and "lighthouse" not in text, table
    await _read_back(url, KEY)


async def test_a_conversion_that_fails_changes_nothing(url: str) -> None:
    await _plant(url, KEY)
    with pytest.raises(WrongKeyError):
        await convert_keys(url, OTHER, KEY)
    with pytest.raises(AlreadyEncryptedError):
        await convert_keys(url, None, OTHER)
    await _read_back(url, KEY)


async def test_a_copy_into_an_encrypted_database_is_sealed(url: str, plain_url: str) -> None:
    await _plant(plain_url, None)
    async with open_database(plain_url) as src, open_database(url, key=KEY) as dst:
        report = await copy_all(src, dst)
    assert not report.conflicts
    for table, text in (await _dump(url)).items():
        assert PLANTED not in text and "lighthouse" not in text, table
    await _read_back(url, KEY)


def _cli(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


async def test_the_command_line_encrypts_rekeys_and_decrypts(url: str, tmp_path: Path) -> None:
    await _plant(url, None)
    key, other = tmp_path / "k", tmp_path / "o"
    key.write_text(KEY.hex())
    other.write_text(OTHER.hex())
    assert "encrypted " in await asyncio.to_thread(_cli, "--db", url, "--key-file", str(key), "encrypt")
    refused = await asyncio.to_thread(_cli, "--db", url, "list-sessions", code=1)
    assert "is encrypted: give its key" in refused and len(refused.strip().splitlines()) == 1
    wrong = await asyncio.to_thread(_cli, "--db", url, "--key-file", str(other), "list-sessions", code=1)
    assert "the key does not open" in wrong and "Traceback" not in wrong
    again = await asyncio.to_thread(_cli, "--db", url, "--key-file", str(key), "encrypt", code=1)
    assert "is encrypted already" in again
    shown = await asyncio.to_thread(_cli, "--db", url, "--key-file", str(key), "show", "s1", "--json")
    assert PLANTED in shown
    keyword = await asyncio.to_thread(
        _cli, "--db", url, "--key-file", str(key), "search", "lighthouse", "--mode", "keyword", code=1
    )
    assert "keyword search does not run on an encrypted" in keyword
    rekeyed = await asyncio.to_thread(
        _cli, "--db", url, "--key-file", str(key), "rekey", "--new-key-file", str(other)
    )
    assert "rekeyed " in rekeyed
    await _read_back(url, OTHER)
    copied = tmp_path / "copy.db"  # copy opens both sides with the one key
    await asyncio.to_thread(_cli, "--key-file", str(other), "copy", url, str(copied))
    async with open_database(copied, key=OTHER) as db:
        assert len(await db.store("s1").get_history()) == 2
    assert PLANTED.encode() not in copied.read_bytes()
    assert "decrypted " in await asyncio.to_thread(_cli, "--db", url, "--key-file", str(other), "decrypt")
    await _read_back(url, None)


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _caught_converting(url: str, proc: subprocess.Popen[bytes]) -> bool:
    """Wait until the conversion's backend is updating the messages, then SIGKILL the client
    (True), or see it finish first (False)."""
    watcher = await asyncpg.connect(url)
    try:
        while proc.poll() is None:
            busy = await watcher.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE 'UPDATE messages%'"
            )
            if busy:
                os.kill(proc.pid, signal.SIGKILL)
                return True
        return False
    finally:
        await watcher.close()


async def test_a_rekey_killed_midway_leaves_it_under_one_key(
    url: str,
    tmp_path: Path,
    console_script: Path,  # noqa: F811 (the fixture)
) -> None:
    async with open_database(url, key=KEY) as db:
        store = db.store("big", project="/p")
        await store.append_many([_text("user", f"{PLANTED} {i} " + "words " * 150) for i in range(3000)])
    key, other = tmp_path / "k", tmp_path / "o"
    key.write_text(KEY.hex())
    other.write_text(OTHER.hex())
    args = [str(console_script), "--db", url, "--key-file", str(key), "rekey", "--new-key-file", str(other)]
    proc = await asyncio.to_thread(_start, args)
    killed = await _caught_converting(url, proc)
    await asyncio.to_thread(proc.wait)
    # Killed, the server rolled the transaction back: every row is under the old key still (had
    # it finished first, every row would be under the new one). Never a mix.
    under = KEY if killed and proc.returncode == -signal.SIGKILL else OTHER
    async with open_database(url, key=under) as db:
        history = await db.store("big", project="/p").get_history()
        assert len(history) == 3000 and history[-1].content[0].text.startswith(f"{PLANTED} 2999")  # type: ignore[union-attr]
    with pytest.raises(WrongKeyError):
        async with open_database(url, key=OTHER if under == KEY else KEY):
            pass


async def test_an_altered_value_is_a_one_line_error(url: str) -> None:
    await _plant(url, KEY)
    conn = await asyncpg.connect(url)
    try:  # flip the last bit of every sealed payload on the server
        await conn.execute(
            "UPDATE messages SET payload = overlay(payload placing"
            " set_byte(substring(payload from length(payload)), 0,"
            " get_byte(payload, length(payload) - 1) # 1) from length(payload))"
        )
    finally:
        await conn.close()
    async with open_database(url, key=KEY) as db:
        with pytest.raises(UnsealError) as caught:
            await db.store("s1", project="/p").get_history()
    assert "does not decrypt under the key" in str(caught.value) and "\n" not in str(caught.value)


async def test_an_id_that_begins_as_a_sealed_value_is_refused_under_a_key(url: str, plain_url: str) -> None:
    from axio_context.sealing import SealMarkError

    async with open_database(url, key=KEY) as db:
        await db.store("kept", project="/p").append(_text("user", "hello"))
        with pytest.raises(SealMarkError) as caught:
            await db.store("axsealed1:mine", project="/p").append(_text("user", "hi"))
        assert "axsealed1:" in str(caught.value) and "\n" not in str(caught.value)
        ranked = await PostgresContextPool.open(db.pool, "p", 10)  # type: ignore[attr-defined]
        with pytest.raises(SealMarkError):
            await ranked.add(ContextItem(content="x", description="d", id="axsealed1:k"))
        # nothing was stored that would break a read: the listing still opens
        assert [s.session_id for s in (await db.list_sessions()).sessions] == ["kept"]
    async with open_database(plain_url) as db:  # without a key it is an id like any other
        await db.store("axsealed1:mine", project="/p").append(_text("user", "hi"))
        assert [s.session_id for s in (await db.list_sessions()).sessions] == ["axsealed1:mine"]


async def test_a_list_argument_holding_a_sealed_looking_text_is_refused_under_a_key(url: str) -> None:
    # A list (an array parameter: a batch's ids or roles) is checked item by item, as a lone
    # value is: texts only, texts with NULLs, and a JSON string's mark alike.
    from axio_context.sealing import SealMarkError

    pool = await connect(url, key=KEY)
    try:
        async with pool.acquire() as conn:
            assert await conn.fetchval("SELECT $1::text[]", ["a", "b:axsealed1:"]) == ["a", "b:axsealed1:"]
            assert await conn.fetchval("SELECT $1::bigint[]", [1, None, 2]) == [1, None, 2]

            class Label(str):
                pass

            assert await conn.fetchval("SELECT $1::text[]", [None, Label("a")]) == [None, "a"]
            for bad, mark in (
                (["a", "axsealed1:x"], "'axsealed1:'"),
                ([None, "axsealed1:x"], "'axsealed1:'"),
                ([None, Label("axsealed1:x")], "'axsealed1:'"),
                (("a", '"axsealed1:x"'), "'\"axsealed1:'"),
            ):
                with pytest.raises(SealMarkError) as caught:
                    await conn.fetchval("SELECT $1::text[]", bad)
                assert f"begins with {mark}," in str(caught.value), caught.value
    finally:
        await pool.close()
