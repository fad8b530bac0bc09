"""docs/cli.md is the command line's reference: generated from the click commands by
docs/gen_cli.py, current, and complete (every command and subcommand has a section and help)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
from click.testing import CliRunner

from .markdown_blocks import ROOT


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_md_is_what_the_generator_prints_now() -> None:
    gen = generator()
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == gen.render(), "docs/cli.md is out of date: run `python docs/gen_cli.py`"


def test_every_command_has_a_section_and_help() -> None:
    from axio_context_sqlite.cli import cli

    gen = generator()
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    names = [name for name, _cmd, _ctx in gen.commands()]

    def walk(group: click.Group, prefix: str) -> list[tuple[str, click.Command]]:
        found: list[tuple[str, click.Command]] = []
        for name, cmd in group.commands.items():
            found.append((f"{prefix} {name}", cmd))
            if isinstance(cmd, click.Group):
                found.extend(walk(cmd, f"{prefix} {name}"))
        return found

    every = walk(cli, "axio-context")
    assert len(every) > 10
    for name, cmd in every:
        assert name in names, f"{name} is missing from the generator's walk"
        assert f"# {name}\n" in text, f"{name} has no section in docs/cli.md"
        assert (cmd.help or cmd.short_help or "").strip(), f"{name} has no help text"


def test_every_command_is_named_in_the_cli_reference() -> None:
    """Moved from tests/cli/test_search.py (it read README.md, whose reference moved here)."""
    from axio_context_sqlite.cli import cli

    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [name for name in cli.commands if f"axio-context {name}" not in reference]
    assert missing == []


def test_the_generator_check_fails_when_the_reference_is_stale(tmp_path: Path) -> None:
    gen = generator()
    target = tmp_path / "cli.md"
    assert gen.main(["gen_cli.py", "--check"], target) == 1  # missing
    target.write_text(gen.render().replace("## axio-context show\n", ""), encoding="utf-8")
    assert gen.main(["gen_cli.py", "--check"], target) == 1  # a command's section gone
    assert gen.main(["gen_cli.py"], target) == 0
    assert gen.main(["gen_cli.py", "--check"], target) == 0
    assert target.read_text(encoding="utf-8") == gen.render()


def test_the_generator_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, "docs/gen_cli.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _documented_keys(text: str, heading: str) -> list[str]:
    """The keys of the first table after ``heading`` in docs/cli.md (each row's backticked names)."""
    rows = text.split(heading, 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0].splitlines()
    keys: list[str] = []
    for row in rows[2:]:
        keys += re.findall(r"`(\w+)`", row.split("|")[1])
    return keys


def test_the_json_of_search_and_similar_is_what_cli_md_documents(tmp_path: Path) -> None:
    """``search --json`` and ``similar --json`` print one object, with the keys docs/cli.md lists
    (and their help says so); ``--nl`` prints the hits, one a line."""
    from axio_context.testing import text
    from axio_context_sqlite import SQLiteContextStore, connect
    from axio_context_sqlite.cli import cli

    async def fill(path: Path) -> None:
        async with connect(path) as conn:
            store = SQLiteContextStore(conn, "s1", project="p")
            await store.append(text("user", "the parser crashed"))
            await store.append(text("assistant", "fixed the parser"))

    db = tmp_path / "j.db"
    asyncio.run(fill(db))
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    top = _documented_keys(reference, "## The JSON of `search` and `similar`")
    hit = _documented_keys(reference, "A hit:")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", str(db), "reindex"], catch_exceptions=False).exit_code == 0
    for args in (["search", "parser"], ["similar", "s1", "0"]):
        result = runner.invoke(cli, ["--db", str(db), *args, "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert isinstance(out, dict) and sorted(out) == sorted(top), args
        assert out["hits"], args
        assert all(sorted(h) == sorted(hit) for h in out["hits"]), args
        lines = runner.invoke(cli, ["--db", str(db), *args, "--nl"], catch_exceptions=False).stdout
        assert [json.loads(ln) for ln in lines.splitlines()] == out["hits"], args
        help_text = runner.invoke(cli, [args[0], "--help"]).output
        assert "Output one JSON object: hits" in help_text and "JSON array" not in help_text
