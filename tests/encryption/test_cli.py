"""``encrypt``, ``decrypt``, ``rekey`` and ``--key-file`` on the command line: one-line errors, keys
never printed, and a conversion killed with SIGKILL midway leaves a file that opens under one of
the two keys."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from axio_context import Message, TextBlock
from axio_context.backends import open_database
from axio_context.encryption import KeyRequiredError, NotEncryptedError, WrongKeyError
from axio_context_sqlite.admin.encryption import CONVERTING_SUFFIX
from axio_context_sqlite.cli import cli
from tests.cli.test_process import console_script  # noqa: F401 (a fixture)

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))


def _run(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


async def _fill(path: Path, messages: int, key: bytes | None = None) -> None:
    async with open_database(path, key=key) as db:
        store = db.store("planted", project="/p")
        await store.append_many(
            [
                Message(role="user", content=[TextBlock(text=f"PLANTED harbour note {i} " + "words " * 150)])
                for i in range(messages)
            ]
        )


async def _count(path: Path, key: bytes | None) -> int:
    async with open_database(path, key=key, create=False) as db:
        return (await db.info("planted")).message_count


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first.key", tmp_path / "second.key"
    first.write_text(KEY.hex() + "\n")
    second.write_bytes(OTHER)  # 32 raw bytes: a key file may hold either form
    return first, second


def test_encrypt_search_rekey_decrypt(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    first, second = keys
    db = tmp_path / "c.db"
    asyncio.run(_fill(db, 3))
    done = _run("--db", db, "--key-file", first, "encrypt")
    assert done.exit_code == 0 and done.output.strip() == f"encrypted {db}"
    assert b"PLANTED" not in db.read_bytes()
    found = _run("--db", db, "--key-file", first, "search", "harbour", "--json")
    assert found.exit_code == 0 and '"planted"' in found.output
    listed = _run("--db", db, "list-sessions", env={"AXIO_CONTEXT_KEY": KEY.hex()})
    assert listed.exit_code == 0 and "planted" in listed.output
    info = _run("--db", db, "--key-file", first, "info", "--json")
    assert info.exit_code == 0 and json.loads(info.output)["note"] is None
    assert _run("--db", db, "--key-file", first, "rekey", "--new-key-file", second).exit_code == 0
    backup = tmp_path / "copy.db"
    assert _run("--db", db, "--key-file", second, "backup", backup).exit_code == 0
    assert b"PLANTED" not in backup.read_bytes()
    copied = tmp_path / "copied.db"
    assert _run("--key-file", second, "copy", db, copied).exit_code == 0  # both files under the key
    assert b"PLANTED" not in copied.read_bytes() and asyncio.run(_count(copied, OTHER)) == 3
    assert _run("--db", backup, "--key-file", second, "decrypt").exit_code == 0
    assert b"PLANTED" in backup.read_bytes() and asyncio.run(_count(backup, None)) == 3
    assert asyncio.run(_count(db, OTHER)) == 3


def test_bad_keys_are_one_line_errors(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    first, second = keys
    db = tmp_path / "c.db"
    asyncio.run(_fill(db, 2, KEY))
    plain = tmp_path / "plain.db"
    asyncio.run(_fill(plain, 2))
    short = tmp_path / "short.key"
    short.write_text("abcd")
    cases = [
        (("--db", db, "list-sessions"), "is encrypted: give its key"),
        (("--db", db, "--key-file", second, "list-sessions"), "the key does not open"),
        (("--db", db, "--key-file", second, "decrypt"), "the key does not open"),
        (
            ("--db", db, "--key-file", short, "list-sessions"),
            "must be 64 hexadecimal characters (32 bytes), not 4",
        ),
        (("--db", db, "--key-file", tmp_path / "missing.key", "info"), "cannot read the key file"),
        (("--db", plain, "--key-file", first, "list-sessions"), "is not encrypted but a key was given"),
        (("--db", plain, "--key-file", first, "decrypt"), "is not encrypted (encrypt gives it a key)"),
        (("--db", db, "--key-file", first, "encrypt"), "is encrypted already (rekey changes its key)"),
        (("--db", db, "decrypt"), "decrypt needs a key"),
        (("--db", db, "--key-file", first, "rekey", "--new-key-file", first), "same as the current one"),
        (("--db", db, "info"), "is encrypted: give its key"),
    ]
    for args, words in cases:
        result = _run(*args)
        assert result.exit_code != 0 or args[-1] == "info", args
        out = result.output
        assert words in out, (args, out)
        assert "Traceback" not in out and "file is not a database" not in out
        assert KEY.hex() not in out and OTHER.hex() not in out
        if args[-1] != "info":
            assert len([line for line in out.splitlines() if line.startswith("Error:")]) == 1
    assert asyncio.run(_count(db, KEY)) == 2 and asyncio.run(_count(plain, None)) == 2


@pytest.mark.parametrize("command", ["encrypt", "rekey"])
def test_conversion_killed_midway_leaves_a_readable_file(
    console_script: Path,  # noqa: F811 (the fixture)
    tmp_path: Path,
    keys: tuple[Path, Path],
    command: str,
) -> None:
    first, second = keys
    db = tmp_path / "c.db"
    before = None if command == "encrypt" else KEY
    asyncio.run(_fill(db, 1500, before))  # ~1.5 MB: the copy takes long enough to be caught
    args = (
        ["--db", db, "--key-file", first, "encrypt"]
        if command == "encrypt"
        else ["--db", db, "--key-file", first, "rekey", "--new-key-file", second]
    )
    after = KEY if command == "encrypt" else OTHER
    temp = db.with_name(db.name + CONVERTING_SUFFIX)
    proc = subprocess.Popen(
        [str(console_script), *map(str, args)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    seen = False
    while proc.poll() is None:
        if temp.exists() and temp.stat().st_size > 0:
            seen = True
            os.kill(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert seen, "the conversion finished before it could be killed"
    assert proc.returncode == -signal.SIGKILL
    # Killed before the rename (the copy was still being written): the old file, untouched, under
    # the old key; the new key is refused with its one-line error, the file is never damaged.
    assert asyncio.run(_count(db, before)) == 1500
    with pytest.raises((KeyRequiredError, NotEncryptedError, WrongKeyError)):
        asyncio.run(_count(db, after))
    # Run again: the half-written file of the killed run is replaced, and the conversion completes.
    assert subprocess.run([str(console_script), *map(str, args)], capture_output=True).returncode == 0
    assert not temp.exists() and asyncio.run(_count(db, after)) == 1500
