"""No output of the command line holds a PostgreSQL password: listings, ``info``, ``stats``,
errors (a URL that does not parse included) and ``--help``, for passwords holding the characters
that defeat a hand-written pattern (``/``, ``?``, ``@``). The server trusts its socket, so it
lets any password in: what is checked is only what is printed."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from axio_context_postgres.embedded import EmbeddedServer
from axio_context_sqlite.cli import cli
from tests.support.postgres import new_database

#: Passwords as people type them (not percent-encoded).
PASSWORDS = ["SecretPw", "Secret@Pw", "Se/cretPw", "Se?cretPw", "Se#cret@P/w?x"]


def _url(pg_server: EmbeddedServer, database: str, password: str) -> str:
    return f"postgresql://postgres:{password}@/{database}?host={pg_server.socket_dir}"


@pytest.fixture(scope="module")
def empty_db(pg_server: EmbeddedServer) -> str:
    return new_database(pg_server, "axio_secrets").rsplit("/", 1)[1].split("?")[0]


@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize(
    "args",
    [
        ["list-sessions"],
        ["list-sessions", "-p", "nothing"],
        ["list-sessions", "--tree"],
        ["info"],
        ["info", "--json"],
        ["stats"],
        ["stats", "--json"],
        ["search", "anything"],
        ["show", "nothing"],
        ["--help"],
        ["list-sessions", "--help"],
    ],
    ids=" ".join,
)
def test_no_output_holds_the_password(
    pg_server: EmbeddedServer, empty_db: str, password: str, args: list[str]
) -> None:
    url = _url(pg_server, empty_db, password)
    for how in ("--db", "env"):
        argv = ["--db", url, *args] if how == "--db" else args
        env = {"AXIO_CONTEXT_DB": url} if how == "env" else {}
        result = CliRunner().invoke(cli, argv, env=env)
        out = result.output + (result.stderr if result.stderr_bytes is not None else "")
        assert "Traceback" not in out, out
        assert "SecretPw" not in out and "Secret" not in out and "cret" not in out, (how, out)
        if "/" in password or "?" in password or "#" in password:
            continue  # a URL that does not parse: one line saying so (below)
        assert result.exit_code in (0, 1), out
        if args[:1] == ["list-sessions"] and "--help" not in args:
            assert f"postgresql://postgres:***@/{empty_db}?host={pg_server.socket_dir}" in out, out


@pytest.mark.parametrize("password", [p for p in PASSWORDS if set(p) & set("/?#")])
def test_a_url_that_does_not_parse_says_so_in_one_line_without_the_password(
    pg_server: EmbeddedServer, empty_db: str, password: str
) -> None:
    result = CliRunner().invoke(cli, ["--db", _url(pg_server, empty_db, password), "list-sessions"])
    assert result.exit_code == 1
    assert "does not parse" in result.output and "percent-encoded" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "cret" not in result.output, result.output
    assert "postgresql://postgres:***@" in result.output
