"""docs/cli.md is the command line's reference: generated from the click commands by
docs/gen_cli.py, current, and complete (every command and subcommand has a section and help)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click

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
