"""The backend registry (axio_context.backends.registry; issue 31, item 2): which backend opens a
location, what an unknown scheme or a missing driver says, and that a backend registered through
a real entry point is found. Real files, the real PostgreSQL server, real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from axio_context.backends import (
    BackendMissingError,
    backend_for,
    open_database,
    registered_schemes,
    scheme_of,
)
from axio_context.testing import text
from axio_context_postgres.embedded import EmbeddedServer
from tests.support.postgres import create_database

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("where", "scheme"),
    [
        ("chat.db", "sqlite"),
        ("./a/b.db", "sqlite"),
        ("C:/x.db", "sqlite"),  # a drive letter is no scheme: no ://
        ("sqlite:///abs/chat.db", "sqlite"),
        ("SQLite://rel.db", "sqlite"),
        ("postgresql://u@h/db", "postgresql"),
        ("POSTGRES://u@h/db", "postgres"),
        ("mysql://h/db", "mysql"),
    ],
)
def test_the_scheme_of_a_location(where: str, scheme: str) -> None:
    assert scheme_of(where) == scheme
    assert scheme_of(Path("x.db")) == "sqlite"


def test_a_path_and_sqlite_urls_open_sqlite_and_the_same_file(tmp_path: Path) -> None:
    assert backend_for(tmp_path / "a.db").name == "sqlite"
    assert backend_for("sqlite://" + str(tmp_path / "a.db")).name == "sqlite"
    assert {"sqlite", "postgresql", "postgres"} <= set(registered_schemes())


async def test_a_database_opened_by_path_is_the_one_opened_by_sqlite_url(tmp_path: Path) -> None:
    file = tmp_path / "chat.db"
    async with open_database(f"sqlite://{file}") as db:
        await db.store("s1", project="p").append(text("user", "hello"))
    assert file.is_file()
    async with open_database(file, create=False) as again:
        assert str(again.path) == str(file)
        assert [i.session_id for i in (await again.list_sessions()).sessions] == ["s1"]


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
async def test_both_postgres_schemes_open_the_server(pg_server: EmbeddedServer, scheme: str) -> None:
    url = await create_database(pg_server, f"axio_registry_{scheme}")
    assert url.startswith("postgresql://")
    where = scheme + url[len("postgresql") :]
    assert backend_for(where).name == "postgresql"
    async with open_database(where) as db:
        assert (await db.list_sessions()).sessions == []
        assert "://" in str(db.path) and "postgres" in str(db.path)


def test_an_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(BackendMissingError) as caught:
        backend_for("mysql://localhost/chat")
    message = str(caught.value)
    assert message.startswith("no backend opens mysql:// databases (known: ")
    for known in ("postgres://", "postgresql://", "sqlite://"):
        assert known in message
    assert "a file path" in message and "'axio_context.backends' entry point group" in message
    assert "\n" not in message


def _run(code: str, *, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), str(ROOT)])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _entry_points(tmp_path: Path, lines: str) -> Path:
    """A real installed distribution (a dist-info folder on sys.path) declaring ``lines`` in the
    ``axio_context.backends`` entry point group."""
    info = tmp_path / "site" / "axio_demo_backends-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: axio-demo-backends\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[axio_context.backends]\n{lines}\n")
    return tmp_path / "site"


def test_a_backend_registered_by_an_entry_point_is_found_and_listed(tmp_path: Path) -> None:
    site = _entry_points(tmp_path, "demo = axio_context_sqlite.backend:BACKEND")
    done = _run(
        """
        from axio_context.backends import backend_for, registered_schemes
        print("demo" in registered_schemes(), backend_for("demo://x").name)
        """,
        path=site,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "sqlite"]


def test_a_backend_whose_package_is_missing_says_what_to_install(tmp_path: Path) -> None:
    site = _entry_points(tmp_path, "nodriver = axio_no_such_backend_package.backend:BACKEND")
    done = _run(
        """
        from axio_context.backends import BackendMissingError, backend_for
        try:
            backend_for("nodriver://host/db")
        except BackendMissingError as exc:
            print(exc)
        """,
        path=site,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "a nodriver:// database needs the nodriver backend: install the package that provides it"
        " (No module named 'axio_no_such_backend_package')\n"
    )


def test_a_missing_postgres_driver_names_the_extra_in_one_line(tmp_path: Path) -> None:
    """asyncpg not importable (as where the extra is not installed): the library's error and the
    command line's one line both name ``axio-context[postgres]``."""
    blocked = "import sys; sys.modules['asyncpg'] = None\n"
    library = _run(
        blocked
        + """
from axio_context.backends import BackendMissingError, backend_for
try:
    backend_for("postgresql://u@h/db")
except BackendMissingError as exc:
    print(exc)
"""
    )
    assert library.returncode == 0, library.stderr
    assert library.stdout.startswith(
        "a postgresql:// database needs the postgres backend: pip install 'axio-context[postgres]'"
    )
    command = _run(
        blocked
        + """
from axio_context_sqlite.cli import cli
cli.main(["--db", "postgresql://u@h/db", "list-sessions"], prog_name="axio-context")
"""
    )
    assert command.returncode == 1
    assert "Traceback" not in command.stderr
    assert command.stderr.count("\n") == 1
    assert "pip install 'axio-context[postgres]'" in command.stderr
