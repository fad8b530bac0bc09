"""Migrations: every released schema version, kept as a text SQL dump in ``tests/fixtures``,
opens at the current version with nothing lost; an upgrade is one transaction.

The dumps and their expectations come from ``tests/fixtures/make_fixture.py`` (see its
docstring); a new schema version without its dump fails here.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import sqlean
from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context.errors import DatabaseError, SchemaVersionError
from axio_context.transcript import format_time
from axio_context_sqlite import SCHEMA_VERSION, SQLiteContextStore, connect, open_database
from axio_context_sqlite.store import appending, schema
from tests.fixtures.make_fixture import export, load
from tests.support.sqlite_checks import check_storage, raw_connect, scalar, text_message

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DUMPS = sorted(FIXTURES.glob("schema_v*.sql"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))


def _version_of(dump: Path) -> int:
    return int(re.fullmatch(r"schema_v(\d+)\.sql", dump.name).group(1))  # type: ignore[union-attr]


def _user_version(path: Path) -> int:
    return int(scalar(path, "PRAGMA user_version"))


def _load_dump(dump: Path, path: Path) -> Any:
    """Create ``path`` from the dump; returns the dump's expectations."""
    load(dump.read_text(), path)
    return json.loads(dump.with_suffix(".json").read_text())


def _matches(actual: Any, expected: Any, where: str = "$") -> None:
    """``actual`` holds everything ``expected`` does (mappings may have gained keys since)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for k, v in expected.items():
            assert k in actual, f"{where}.{k} missing"
            _matches(actual[k], v, f"{where}.{k}")
    else:
        assert actual == expected, where


def test_every_released_version_has_a_fixture() -> None:
    assert [_version_of(d) for d in DUMPS] == list(range(1, SCHEMA_VERSION + 1)), (
        "run `python tests/fixtures/make_fixture.py` to add the dump of the new schema version"
    )
    for dump in DUMPS:
        assert dump.with_suffix(".json").is_file()
        assert f"PRAGMA user_version = {_version_of(dump)};" in dump.read_text().splitlines()[:3]


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: p.stem)
async def test_released_version_opens_current_with_nothing_lost(tmp_path: Path, dump: Path) -> None:
    path = tmp_path / "old.db"
    expected = await asyncio.to_thread(_load_dump, dump, path)
    assert _user_version(path) == _version_of(dump)

    _matches(await export(path), expected)  # export opens it: the upgrade happens here
    assert _user_version(path) == SCHEMA_VERSION
    check_storage(path)

    async with connect(path) as conn:
        # The upgraded data works for writing too, forks included.
        for session_id in expected["projects"]["alpha"]:
            store = SQLiteContextStore(conn, session_id, project="alpha")
            await store.append(text_message("written after the upgrade"))
            full = await store.get_full_history()
            assert len(full) == expected["sessions"][session_id]["info"]["message_count"] + 1
            assert full[-1].text == "written after the upgrade"
    check_storage(path)


async def test_vacuum_seals_what_no_fold_reached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Version 4 had no chunks, and its folds are done; appends one at a time reach a fold only
    every 1,024 messages, and a check (every 64th append of the process) only once 64 came: fewer
    leave the old blocks unsealed. ``vacuum`` seals such a session's older messages, and every
    read returns what it did before."""
    path = tmp_path / "v4.db"
    expected = await asyncio.to_thread(_load_dump, FIXTURES / "schema_v4.sql", path)
    monkeypatch.setattr(appending, "_appends_since_check", 0)
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "beta-long", project="beta")
        for i in range(40):  # 69 + 40: the first block is wholly older than the newest 32
            await store.append(text_message(f"one more, {i}"))
        history = await store.get_full_history()
    assert scalar(path, "SELECT COUNT(*) FROM chunks") == 0
    async with open_database(path) as db:
        report = await db.vacuum()
    assert report.chunks_sealed == scalar(path, "SELECT COUNT(*) FROM chunks") > 0
    async with connect(path) as conn:
        assert await SQLiteContextStore(conn, "beta-long", project="beta").get_full_history() == history
    actual = await export(path)
    for session_id, want in expected["sessions"].items():
        if session_id != "beta-long":
            _matches(actual["sessions"][session_id], want, session_id)
    check_storage(path)


def _current_in_wal(tmp_path: Path) -> Path:
    """A database at the current version (from its dump), in WAL mode."""
    path = tmp_path / "current.db"
    load((FIXTURES / f"schema_v{SCHEMA_VERSION}.sql").read_text(), path)
    db = raw_connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.close()
    return path


def _current_expected() -> Any:
    return json.loads((FIXTURES / f"schema_v{SCHEMA_VERSION}.json").read_text())


def _fingerprint(path: Path) -> tuple[str, int, list[str]]:
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        path.stat().st_mtime_ns,
        sorted(p.name for p in path.parent.iterdir()),
    )


def _with_section(monkeypatch: pytest.MonkeyPatch, sql: str) -> None:
    """Pretend schema.sql had one more step (in this process, for this test only)."""
    step = schema.Migration(SCHEMA_VERSION + 1, "test_step", schema.actions_of(sql))
    steps = (*schema.migrations(), step)
    monkeypatch.setattr(schema, "migrations", lambda: steps)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)


FAILING_SECTION = """
CREATE TABLE extra (x INTEGER);
ALTER TABLE sessions ADD COLUMN flavour TEXT;
UPDATE sessions SET flavour = 'mint';
DELETE FROM messages;
INSERT INTO no_such_table VALUES (1);
"""


async def test_failed_upgrade_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await asyncio.to_thread(_current_in_wal, tmp_path)
    before = _fingerprint(path)
    _with_section(monkeypatch, FAILING_SECTION)

    with pytest.raises(DatabaseError, match="no_such_table"):
        await connect(path)

    assert _fingerprint(path) == before  # same bytes, same mtime, no -wal/-shm left
    db = raw_connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "extra" not in tables
        assert "flavour" not in {r[1] for r in db.execute("PRAGMA table_info(sessions)")}
    finally:
        db.close()
    monkeypatch.undo()
    _matches(await export(path), _current_expected())  # the real code still opens it, nothing lost


FILLING_SECTION = """
CREATE VIRTUAL TABLE extra USING fts5 (t);
INSERT INTO extra (t) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
    SELECT hex(randomblob(200)) || ' word ' || i FROM n;
"""


async def test_upgrade_on_a_full_disk_reports_the_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite may roll a transaction back by itself when the disk fills (FTS5 does, as the
    # version-2 upgrade's indexing hook found): the error must say so,
    # not "cannot rollback - no transaction is active", and the file stays at its version.
    path = await asyncio.to_thread(_current_in_wal, tmp_path)
    _with_section(monkeypatch, FILLING_SECTION)
    db = raw_connect(path)
    try:
        db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0] + 50}")
        with pytest.raises(sqlean.Error, match="full"):
            schema.apply_schema(db)
        assert not db.in_transaction
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert "extra" not in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    finally:
        db.close()
    monkeypatch.undo()
    _matches(await export(path), _current_expected())


GOOD_SECTION = """
CREATE TABLE extra (session_sid INTEGER PRIMARY KEY, note TEXT NOT NULL);
INSERT INTO extra (session_sid, note) SELECT sid, 'upgraded' FROM sessions;
"""


async def test_upgrade_runs_once_even_when_two_connections_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await asyncio.to_thread(_current_in_wal, tmp_path)
    _with_section(monkeypatch, GOOD_SECTION)

    a, b = await asyncio.gather(connect(path), connect(path))  # not idempotent: must run once
    await a.close()
    await b.close()

    db = raw_connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        sessions = db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        assert db.execute("SELECT COUNT(*), MIN(note) FROM extra").fetchone() == (sessions, "upgraded")
    finally:
        db.close()
    _matches(await export(path), _current_expected())


async def test_read_only_connection_refuses_an_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await asyncio.to_thread(_current_in_wal, tmp_path)
    before = _fingerprint(path)
    _with_section(monkeypatch, GOOD_SECTION)
    with pytest.raises(SchemaVersionError, match=rf"version {SCHEMA_VERSION} and needs an upgrade"):
        await connect(path, readonly=True)
    assert _fingerprint(path)[:2] == before[:2]
    assert _user_version(path) == SCHEMA_VERSION


# --- version 3: listing times stored formatted ----------------------------------------------------

_YEAR_1_MS = -62_135_596_800_000
_YEAR_9999_END_MS = 253_402_300_799_999


@pytest.fixture(scope="module")
def current_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("v3") / "times.db"

    async def create() -> None:
        async with connect(path):
            pass

    asyncio.run(create())
    return path


@settings(max_examples=300, deadline=None)
@given(
    created=st.integers(_YEAR_1_MS, _YEAR_9999_END_MS)
    | st.sampled_from([0, -1, 999, 1000, -1000, -1001, _YEAR_1_MS, _YEAR_9999_END_MS]),
    updated=st.integers(_YEAR_1_MS, _YEAR_9999_END_MS),
)
def test_stored_listing_times_are_exactly_pythons(current_file: Path, created: int, updated: int) -> None:
    # The generated columns must give the text format_time gives, before 1970 included, on
    # insert and when a later statement changes the time.
    db = raw_connect(current_file)
    try:
        db.execute("BEGIN")
        db.execute("INSERT INTO sessions (id, created_at, updated_at) VALUES ('t', ?, ?)", (created, created))
        db.execute("UPDATE sessions SET updated_at = ? WHERE id = 't'", (updated,))
        row = db.execute("SELECT created_iso, updated_iso FROM sessions WHERE id = 't'").fetchone()
        db.execute("ROLLBACK")
    finally:
        db.close()
    assert row == (format_time(created), format_time(updated))


async def test_listing_reads_the_stored_times(tmp_path: Path) -> None:
    async with connect(tmp_path / "t.db") as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("hello"))
        await conn.execute("UPDATE sessions SET created_at = -1, updated_at = 1795451521979")
        await conn.commit()
        [info] = await store.list_sessions()
    assert (info.created_at, info.updated_at) == ("1969-12-31T23:59:59.999+00:00", format_time(1795451521979))


def test_migrations_are_one_ordered_list_of_named_steps() -> None:
    steps = schema.migrations()
    assert [s.version for s in steps] == list(range(1, SCHEMA_VERSION + 1))
    assert len({s.name for s in steps}) == len(steps) and all(s.name.isidentifier() for s in steps)
    # The data step of version 2 runs inside that step, in the order schema.sql names it.
    search = steps[1]
    assert search.name == "search_indexes"
    assert schema.DATA_STEPS["index_existing_text"] in search.actions
    # So does message_extras' (provider blocks' text into the keyword index).
    extras = next(s for s in steps if s.name == "message_extras")
    assert schema.DATA_STEPS["reindex_provider_text"] in extras.actions
    assert all(isinstance(a, str) for s in steps if s not in (search, extras) for a in s.actions)


def test_a_data_step_schema_sql_names_must_exist() -> None:
    with pytest.raises(RuntimeError, match="unknown data step 'no_such_step'"):
        schema.actions_of("CREATE TABLE t (x);\n-- python: no_such_step\n")
