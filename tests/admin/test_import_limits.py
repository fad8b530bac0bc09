"""Review 2 (maintenance): import-axio, transcript import limits and stats on real SQLite files.

Each test names the finding it guards: import-axio's comparison with a NaN in a session (1),
integers too large for SQLite in a transcript (2), times outside years 1..9999 once in UTC (3),
malformed peer rows (5), token totals updated here after a migration (6), a sum of token totals
past 2**63 (8) and an empty peer session id (9).
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from axio_context import Checkpoint
from axio_context.errors import DecodeError, TranscriptError
from axio_context.testing import text
from axio_context.transcript import format_time, parse_time
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.errors import CorruptDatabaseError
from axio_context_sqlite.store.upkeep import Stats
from tests.admin.test_axio_migration import _REPLICA_SCHEMA, BUILDERS, Builder
from tests.support.cli_helpers import check_storage, invoke

GOOD = 'plain:[{"type": "text", "text": "hi"}]'


@pytest.fixture(params=BUILDERS)
def build(request: pytest.FixtureRequest) -> Builder:
    """The peer database written by the real axio-context-sqlite 0.12.2, or by its replica."""
    return request.param  # type: ignore[no-any-return]


def _session_ids(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute("SELECT id FROM sessions ORDER BY id")]
    finally:
        con.close()


async def _history(db: Path, session_id: str) -> list[Any]:
    async with connect(db) as conn:
        return await SQLiteContextStore(conn, session_id, project="/proj").get_full_history()


# --- 1: a NaN in a migrated session ---------------------------------------------------------------

NAN_CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t1", "name": "calc", "input": {"x": math.nan, "y": 1.5}}],
}


async def test_import_axio_compares_a_nan_session_exactly(tmp_path: Path, build: Builder) -> None:
    """A session holding NaN (axio writes it for a float tool input) is unchanged on a re-run,
    picks up what the peer appended, and keeps what was appended here, even with replace."""
    peer = tmp_path / "axio.db"
    build(
        peer,
        [
            ["append", "s1", "/proj", {"role": "user", "content": [{"type": "text", "text": "measure it"}]}],
            ["append", "s1", "/proj", NAN_CALL],
            ["append", "s2", "/proj", {"role": "user", "content": [{"type": "text", "text": "plain"}]}],
        ],
    )
    ours = tmp_path / "ours.db"
    async with open_database(ours) as db:
        assert (await db.import_axio(peer)).added == ["s1", "s2"]
        again = await db.import_axio(peer)
        assert (again.unchanged, again.conflicts, again.replaced) == (["s1", "s2"], [], [])
    build(peer, [["append", "s1", "/proj", {"role": "user", "content": [{"type": "text", "text": "more"}]}]])
    async with open_database(ours) as db:
        grown = await db.import_axio(peer)
        assert (grown.updated, grown.conflicts, grown.messages) == (["s1"], [], 1)
    async with connect(ours) as conn:
        await SQLiteContextStore(conn, "s1", project="/proj").append(text("user", "continued here"))
    async with open_database(ours) as db:
        report = await db.import_axio(peer, replace=True)
        assert (report.unchanged, report.replaced, report.conflicts) == (["s1", "s2"], [], [])
    history = await _history(ours, "s1")
    assert [m.text for m in history] == ["measure it", "", "more", "continued here"]
    assert math.isnan(history[1].content[0].input["x"])
    check_storage(ours)


# --- 5 and 9: malformed peer rows -----------------------------------------------------------------


async def _import_axio(ours: Path, peer: Path) -> None:
    async with open_database(ours) as db:
        await db.import_axio(peer)


async def _import_file(ours: Path, source: Path) -> None:
    async with open_database(ours) as db:
        await db.import_file(source)


def _peer(path: Path, sql: str) -> Path:
    con = sqlite3.connect(path)
    for statement in _REPLICA_SCHEMA:
        con.execute(statement)
    con.executescript(sql)
    con.commit()
    con.close()
    return path


def _messages(*sessions: str) -> str:
    return "".join(
        "INSERT INTO axio_context_messages (session_id, project, position, role, content)"
        f" VALUES ('{s}', 'p', 0, 'user', '{GOOD}');"
        for s in sessions
    )


ODD_PEERS = {
    "content BLOB": (
        "INSERT INTO axio_context_messages (session_id, project, position, role, content)"
        " VALUES ('s2', 'p', 0, 'user', CAST('" + GOOD + "' AS BLOB));",
        "session 's2' position 0: content is a BLOB, not text",
    ),
    "content invalid UTF-8": (
        "INSERT INTO axio_context_messages (session_id, project, position, role, content)"
        " VALUES ('s2', 'p', 0, 'user', CAST(x'706c61696e3aff' AS TEXT));",
        "session 's2' position 0: content is not valid UTF-8",
    ),
    "project invalid UTF-8": (
        "INSERT INTO axio_context_messages (session_id, project, position, role, content)"
        f" VALUES ('s2', CAST(x'70ff' AS TEXT), 0, 'user', '{GOOD}');",
        "session 's2' position 0: project is not valid UTF-8",
    ),
    "tokens as text": (
        _messages("s2") + "INSERT INTO axio_context_tokens VALUES ('s2', 'p', 'lots', 0);",
        "session 's2' project 'p': input_tokens: 'lots' is not a token total",
    ),
    "tokens past 2**63 (REAL)": (
        _messages("s2") + "INSERT INTO axio_context_tokens VALUES ('s2', 'p', 0, 1e30);",
        "session 's2' project 'p': output_tokens: 1e+30 is not a token total",
    ),
    "tokens negative": (
        _messages("s2") + "INSERT INTO axio_context_tokens VALUES ('s2', 'p', -5, 0);",
        "session 's2' project 'p': input_tokens: -5 is not a token total",
    ),
    "empty session id": (_messages(""), "session '' position 0: a session id must not be empty"),
    "empty session id (tokens only)": (
        "INSERT INTO axio_context_tokens VALUES ('', 'p', 1, 2);",
        "session '' project 'p': a session id must not be empty",
    ),
}


@pytest.mark.parametrize(("sql", "message"), list(ODD_PEERS.values()), ids=list(ODD_PEERS))
def test_import_axio_refuses_a_malformed_peer_before_writing(tmp_path: Path, sql: str, message: str) -> None:
    """Sessions s0 and s1 are good and come first; the bad row is found before either is written,
    and the error names the peer file, the session and the row."""
    peer = _peer(tmp_path / "peer.db", _messages("s0", "s1") + sql)
    ours = tmp_path / "ours.db"
    with pytest.raises(DecodeError) as caught:
        asyncio.run(_import_axio(ours, peer))
    assert str(caught.value).startswith(f"{peer}: ")
    assert message in str(caught.value)
    assert str(ours) not in str(caught.value)
    assert _session_ids(ours) == []
    result = invoke("--db", ours, "import-axio", peer, ok=False)
    assert result.exit_code == 1 and message in result.stderr and "Traceback" not in result.output


def test_import_axio_read_error_names_the_peer_file(tmp_path: Path) -> None:
    """A peer whose message table is damaged (its root page overwritten): a named error about
    the peer file, not this database."""
    peer = _peer(tmp_path / "peer.db", _messages(*[f"s{i}" for i in range(300)]))
    con = sqlite3.connect(peer)
    table = "SELECT rootpage FROM sqlite_master WHERE name = 'axio_context_messages'"
    root = con.execute(table).fetchone()[0]
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    data = bytearray(peer.read_bytes())
    data[(root - 1) * page_size : root * page_size] = b"\xa5" * page_size
    peer.write_bytes(bytes(data))
    ours = tmp_path / "ours.db"
    with pytest.raises(CorruptDatabaseError) as caught:
        asyncio.run(_import_axio(ours, peer))
    assert str(peer) in str(caught.value) and str(ours) not in str(caught.value)
    result = invoke("--db", ours, "import-axio", peer, ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert str(peer) in result.stderr and str(ours) not in result.stderr


# --- 6: token totals updated here after a migration -----------------------------------------------


async def test_import_axio_keeps_token_totals_updated_here(tmp_path: Path, build: Builder) -> None:
    peer = tmp_path / "axio.db"
    hi = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    build(peer, [["append", "s", "p", hi], ["set_tokens", "s", "p", 10, 20]])
    ours = tmp_path / "ours.db"
    async with open_database(ours) as db:
        assert (await db.import_axio(peer)).added == ["s"]
    async with connect(ours) as conn:
        await SQLiteContextStore(conn, "s", project="p").add_context_tokens(1000, 500)
    async with open_database(ours) as db:
        report = await db.import_axio(peer)
        assert (report.updated, report.unchanged) == ([], ["s"])
    async with connect(ours) as conn:
        assert await SQLiteContextStore(conn, "s", project="p").get_context_tokens() == (1010, 520)
    # the peer continued the conversation: its messages are taken, and each of its totals that
    # is ahead of the one here (totals only grow; these were counted on here past the peer's)
    reply = {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    build(peer, [["append", "s", "p", reply], ["add_tokens", "s", "p", 5, 5]])  # (15, 25) there
    async with open_database(ours) as db:
        assert (await db.import_axio(peer)).updated == ["s"]
    async with connect(ours) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        assert len(await store.get_history()) == 2
        assert await store.get_context_tokens() == (1010, 520)
    build(peer, [["append", "s", "p", hi], ["add_tokens", "s", "p", 2000, 0]])  # (2015, 25) there
    async with open_database(ours) as db:
        assert (await db.import_axio(peer)).updated == ["s"]
    async with connect(ours) as conn:
        assert await SQLiteContextStore(conn, "s", project="p").get_context_tokens() == (2015, 520)
    check_storage(ours)


async def test_import_axio_takes_totals_the_peer_counted_on(tmp_path: Path, build: Builder) -> None:
    # The same transcript on both sides (or none: a session holding only totals), the peer's
    # totals ahead in both counts: the peer kept counting, so they are taken.
    peer = tmp_path / "axio.db"
    hi = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    build(peer, [["append", "s", "p", hi], ["set_tokens", "s", "p", 10, 20], ["set_tokens", "t", "p", 1, 2]])
    ours = tmp_path / "ours.db"
    async with open_database(ours) as db:
        assert (await db.import_axio(peer)).added == ["s", "t"]
    build(peer, [["add_tokens", "s", "p", 5, 5], ["add_tokens", "t", "p", 3, 3]])
    async with open_database(ours) as db:
        report = await db.import_axio(peer)
        assert (report.updated, report.unchanged, report.messages) == (["s", "t"], [], 0)
        again = await db.import_axio(peer)
        assert (again.updated, again.unchanged) == ([], ["s", "t"])
    async with connect(ours) as conn:
        assert await SQLiteContextStore(conn, "s", project="p").get_context_tokens() == (15, 25)
        assert await SQLiteContextStore(conn, "t", project="p").get_context_tokens() == (4, 5)
        # counted on here past the peer in one count: these are kept
        await SQLiteContextStore(conn, "t", project="p").add_context_tokens(100, 0)
    build(peer, [["add_tokens", "t", "p", 1, 1]])
    async with open_database(ours) as db:
        assert (await db.import_axio(peer)).unchanged == ["s", "t"]
    async with connect(ours) as conn:
        assert await SQLiteContextStore(conn, "t", project="p").get_context_tokens() == (104, 5)
    check_storage(ours)


# --- 2 and 3: transcript values SQLite or datetime cannot hold ------------------------------------


async def _export_lines(tmp_path: Path) -> list[dict[str, Any]]:
    """A jsonl export of s0, s1 and s1's fork (last), which holds a checkpoint."""
    src = tmp_path / "src.db"
    async with connect(src) as conn:
        for sid in ("s0", "s1"):
            await SQLiteContextStore(conn, sid, project="p").append_many(
                [text("user", f"{sid} question"), text("assistant", f"{sid} answer")]
            )
        fork = await SQLiteContextStore(conn, "s1", project="p").fork()
        await fork.append(text("user", "fork question"))
        await fork.add_checkpoint(Checkpoint(position=2, summary=[text("user", "summary")], tokens_before=9))
    buf = io.BytesIO()
    async with open_database(src) as db:
        await db.export(buf.write, format="jsonl")
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert [ln["id"] for ln in lines if ln["kind"] == "session"][-1] == fork.session_id
    return lines


def _last_session(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return [ln for ln in lines if ln["kind"] == "session"][-1]


HUGE = 2**63
BAD_INTEGERS = {
    "input_tokens": (lambda s: s.update(input_tokens=HUGE), r"\$\.input_tokens: 9223372036854775808 is"),
    "output_tokens": (lambda s: s.update(output_tokens=HUGE), r"\$\.output_tokens: 9223372036854775808"),
    "fork_position": (lambda s: s.update(fork_position=HUGE), r"\$\.fork_position: 9223372036854775808"),
    "checkpoint id": (
        lambda s: s["checkpoints"][0].update(id=HUGE),
        r"\$\.checkpoints\[0\]\.id: 9223372036854775808",
    ),
    "tokens_before": (
        lambda s: s["checkpoints"][0].update(tokens_before=HUGE),
        r"\$\.checkpoints\[0\]\.tokens_before: 9223372036854775808",
    ),
    "tokens_after": (
        lambda s: s["checkpoints"][0].update(tokens_after=-HUGE - 1),
        r"\$\.checkpoints\[0\]\.tokens_after: -9223372036854775809",
    ),
}


@pytest.mark.parametrize(("change", "message"), list(BAD_INTEGERS.values()), ids=list(BAD_INTEGERS))
def test_import_refuses_integers_sqlite_cannot_hold_before_writing(
    tmp_path: Path, change: Any, message: str
) -> None:
    lines = asyncio.run(_export_lines(tmp_path))
    change(_last_session(lines))
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    ours = tmp_path / "ours.db"
    with pytest.raises(TranscriptError, match=message):
        asyncio.run(_import_file(ours, source))
    assert _session_ids(ours) == []
    result = invoke("--db", ours, "import", source, ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert _session_ids(ours) == []


async def test_import_keeps_the_largest_integers_sqlite_holds(tmp_path: Path) -> None:
    lines = await _export_lines(tmp_path)
    last = _last_session(lines)
    last.update(input_tokens=HUGE - 1)
    last["checkpoints"][0].update(tokens_before=-HUGE, tokens_after=HUGE - 1)
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    ours = tmp_path / "ours.db"
    async with open_database(ours) as db:
        await db.import_file(source)
        buf = io.BytesIO()
        await db.export(buf.write, format="jsonl")
    assert [json.loads(x) for x in buf.getvalue().splitlines()] == lines


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("message", "9999-12-31T23:59:59.999-23:59"),
        ("session", "0001-01-01T00:00:00.000+23:59"),
        ("checkpoint", "9999-12-31T23:00:00.000-01:00"),
    ],
)
async def test_import_refuses_times_outside_datetime_once_in_utc(
    tmp_path: Path, where: str, value: str
) -> None:
    lines = await _export_lines(tmp_path)
    if where == "message":
        lines[-1]["created_at"] = value
    elif where == "session":
        _last_session(lines)["created_at"] = value
    else:
        _last_session(lines)["checkpoints"][0]["created_at"] = value
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    ours = tmp_path / "ours.db"
    async with open_database(ours) as db:
        with pytest.raises(TranscriptError, match=r"outside years 1\.\.9999 once converted to UTC"):
            await db.import_file(source)
    assert _session_ids(ours) == []
    # what it would have broken: a whole-database export of an imported file
    async with open_database(ours) as db:
        await db.export(io.BytesIO().write, format="jsonl")


def test_parse_time_accepts_exactly_the_times_format_time_writes() -> None:
    for text_ in ("0001-01-01T00:00:00.000+00:00", "9999-12-31T23:59:59.999+00:00"):
        assert format_time(parse_time(text_)) == text_
    assert format_time(parse_time("0001-01-01T23:59:00.000+23:59")) == "0001-01-01T00:00:00.000+00:00"
    for text_ in ("9999-12-31T23:59:59.999-00:01", "0001-01-01T00:00:00.000+00:01"):
        with pytest.raises(DecodeError, match=r"outside years 1\.\.9999"):
            parse_time(text_)


# --- 8: stats past 2**63 --------------------------------------------------------------------------


def test_stats_adds_token_totals_past_2_63(tmp_path: Path) -> None:
    path = tmp_path / "big.db"

    async def run() -> Stats:
        async with connect(path) as conn:
            store = SQLiteContextStore(conn, "a", project="p")
            await store.set_context_tokens(2**62, 2**63 - 1)
            # a second session with the same totals (a fork's inherited ones are counted once)
            await SQLiteContextStore(conn, "a2", project="p").set_context_tokens(2**62, 2**63 - 1)
            await SQLiteContextStore(conn, "b", project="q").set_context_tokens(3, 4)
        async with open_database(path) as db:
            return await db.stats()

    stats = asyncio.run(run())
    assert (stats.input_tokens, stats.output_tokens) == (2**63 + 3, 2**64 - 2 + 4)
    assert type(stats.input_tokens) is int
    by = {p.project: (p.input_tokens, p.output_tokens) for p in stats.by_project}
    assert by == {"p": (2**63, 2**64 - 2), "q": (3, 4)}
    doc = json.loads(invoke("--db", path, "stats", "--json").stdout)
    assert (doc["input_tokens"], doc["output_tokens"]) == (2**63 + 3, 2**64 + 2)
