"""Starting ``axio-context mcp``: a database server that is down, a file that is not there, and the
``mcp`` extra missing, each one line; the core and the command line never import the SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from axio_context.backends import open_database
from axio_context.testing import text
from axio_context_sqlite.cli import cli

from .support import served

PASSWORD = "s3cr3t-pw%21"


async def test_a_server_that_is_down_is_a_tool_error_without_the_password() -> None:
    where = f"postgresql://axio:{PASSWORD}@127.0.0.1:1/nothing?connect_timeout=2"
    async with served(where) as client:
        assert "list_sessions" in await client.names()  # the server starts: it opens on a call
        for _ in range(2):  # and tries again on the next one
            error = await client.error("list_sessions")
            assert "s3cr3t" not in error and "%21" not in error, error
            assert error


async def test_an_encrypted_file_is_served_under_its_key_file(tmp_path: Path) -> None:
    key = tmp_path / "db.key"
    key.write_text(bytes(range(32)).hex())
    where = str(tmp_path / "secret.db")
    async with open_database(where, key=bytes(range(32))) as db:
        await db.store("vault").append(text("user", "the harbour code is 1234"))
    async with served(where, "--key-file", str(key)) as client:
        found = await client.data("search_sessions", {"query": "harbour", "mode": "keyword"})
        assert [h["session_id"] for h in found["hits"]] == ["vault"]
    async with served(where) as client:  # no key: each call says so, in one line
        assert "key" in await client.error("list_sessions")


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "none.db"), "mcp"])
    assert result.exit_code == 1
    assert result.output == f"Error: no database at {tmp_path / 'none.db'}\n"
    assert not (tmp_path / "none.db").exists()


def test_without_the_extra_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['mcp'] = None\n"
        "from axio_context_sqlite.cli import main\n"
        f"sys.argv = ['axio-context', '--db', {str(tmp_path / 'x.db')!r}, 'mcp']\n"
        "main()\n"
    )
    (tmp_path / "x.db").touch()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == "Error: the MCP server needs the mcp extra: pip install 'axio-context[mcp]'\n"


def test_the_core_and_the_command_line_do_not_import_the_sdk() -> None:
    script = (
        "import sys, axio_context, axio_context.backends, axio_context_sqlite.cli, axio_context_mcp\n"
        "import axio_context_mcp.tools\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
