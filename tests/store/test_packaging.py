"""Packaging: the wheel carries ``schema.sql`` byte for byte and ``py.typed``, and a
non-editable install uses its own copy of the schema (not the repository's)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling (the dev extra)")
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            str(ROOT),
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [built] = out.glob("axio_context-*.whl")
    return built


def test_wheel_carries_the_schema_and_type_markers(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert zf.read("axio_context_sqlite/schema.sql") == (ROOT / "schema.sql").read_bytes()
        assert "axio_context/py.typed" in names
        assert "axio_context_sqlite/py.typed" in names
        assert not any(n.startswith("tests/") for n in names)
        assert [n for n in names if n.endswith("schema.sql")] == ["axio_context_sqlite/schema.sql"]


INSTALLED = textwrap.dedent(
    """
    import asyncio, hashlib, json, sqlite3, sys, tempfile
    from importlib import resources
    from pathlib import Path
    import axio_context_sqlite
    from axio_context_sqlite import SCHEMA_VERSION, connect
    from axio_context_sqlite.store.schema import schema_text

    async def main():
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "x.db"
            async with connect(db):
                pass
            conn = sqlite3.connect(db)
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.close()
        packaged = resources.files("axio_context_sqlite").joinpath("schema.sql")
        print(json.dumps({
            "module": axio_context_sqlite.__file__,
            "packaged": packaged.is_file(),
            "schema_sha": hashlib.sha256(schema_text().encode()).hexdigest(),
            "version": version,
            "current": SCHEMA_VERSION,
        }))

    asyncio.run(main())
    """
)


def test_installed_copy_is_used_and_equals_the_root_schema(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    # Run from elsewhere with only the install on the path: the repository cannot be imported.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run(
        [sys.executable, "-c", INSTALLED], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert Path(result["module"]).is_relative_to(site)
    assert result["packaged"] is True
    assert result["schema_sha"] == hashlib.sha256((ROOT / "schema.sql").read_bytes()).hexdigest()
    assert result["version"] == result["current"]


def test_installed_aiosqlite_is_the_pinned_version() -> None:
    """store/worker.py relies on aiosqlite's internals (its worker ``_thread``, queue ``_tx``,
    ``_connection``, ``_running``): only the exact version pinned in pyproject.toml was checked."""
    import tomllib
    from importlib.metadata import version

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d.split("==", 1)[1].strip() for d in deps if d.replace(" ", "").startswith("aiosqlite==")]
    assert pins, "pyproject.toml must pin aiosqlite to one exact version (aiosqlite==X.Y.Z)"
    assert version("aiosqlite") == pins[0]
