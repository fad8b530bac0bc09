"""The library calls behind what the command line shows and accepts: short id prefixes, the
stored project a typed path names, and removing a database a failed command created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.admin.files import removed_if_failed
from axio_context_sqlite.store.naming import SHORT_ID, project_forms, unique_prefix


async def _sessions(path: Path, ids: list[str], project: str = "/p") -> None:
    async with connect(path) as conn:
        for i in ids:
            await SQLiteContextStore(conn, i, project=project).append(text("user", "q"))


@pytest.mark.parametrize("extra", [0, 40])  # few ids: prefix queries; many: one read of every id
async def test_short_ids_are_the_shortest_unique_prefixes(tmp_path: Path, extra: int) -> None:
    path = tmp_path / "ids.db"
    twin_a = "abcdef0123456789" + "0" * 16
    twin_b = "abcdef0123456789" + "1" * 16  # shares 16 characters with twin_a
    lone = "f" * 32
    fillers = [f"{n:032x}" for n in range(1, extra + 1)]
    await _sessions(path, [twin_a, twin_b, lone, "label", *fillers])
    async with open_database(path) as db:
        shown = await db.short_ids([twin_a, lone, "label", None, twin_a, *fillers])
        assert shown[twin_a] == twin_a[:17] and shown[lone] == lone[:SHORT_ID]
        assert shown["label"] == "label"  # not a random id: shown whole
        for i, cut in shown.items():
            assert await db.resolve(cut) == i  # typing back what is shown finds it


def test_unique_prefix_keeps_a_whole_id_that_prefixes_another() -> None:
    assert unique_prefix("a" * 12, ["a" * 13]) == "a" * 12
    assert unique_prefix("ab" * 8, ["ab" * 7 + "xx"]) == "ab" * 7 + "a"


async def test_stored_project_finds_the_form_sessions_are_filed_under(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    path = tmp_path / "p.db"
    await _sessions(path, ["a"], project=str(real))
    await _sessions(path, ["b"], project="label")
    monkeypatch.chdir(tmp_path)
    assert project_forms("./link/") == ["./link/", str(link), str(real)]
    assert project_forms("label") == ["label"]
    async with open_database(path) as db:
        assert await db.stored_project("./link/") == str(real)  # resolved through the link
        assert await db.stored_project(str(real) + "/") == str(real)
        assert await db.stored_project("label") == "label"
        assert await db.stored_project("./nowhere") == "./nowhere"  # nothing filed: as typed
        assert await db.stored_project(None) is None


def _create_then_fail(target: Path, folder_holds: str | None = None) -> None:
    with removed_if_failed(target) as resolved:
        resolved.parent.mkdir(parents=True, exist_ok=True)
        if folder_holds is not None:
            (resolved.parent / folder_holds).write_text("mine")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{resolved}{suffix}").write_bytes(b"")
        raise RuntimeError("the import failed")


def test_a_database_a_failed_command_created_is_removed(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "x.db"
    with pytest.raises(RuntimeError):
        _create_then_fail(target)
    assert not (tmp_path / "new").exists()

    # one that existed before stays, and so does a folder holding anything else
    kept = tmp_path / "kept.db"
    kept.write_bytes(b"data")
    with pytest.raises(RuntimeError), removed_if_failed(kept):
        raise RuntimeError("failed")
    assert kept.read_bytes() == b"data"
    other = tmp_path / "shared" / "x.db"
    with pytest.raises(RuntimeError):
        _create_then_fail(other, folder_holds="someone-else.txt")
    assert sorted(os.listdir(tmp_path / "shared")) == ["someone-else.txt"]

    # success keeps what was created
    made = tmp_path / "made" / "x.db"
    with removed_if_failed(made) as resolved:
        resolved.parent.mkdir()
        resolved.write_bytes(b"")
    assert made.exists()
