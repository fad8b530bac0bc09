"""Every example in the docs runs as written: the README's and docs/*.md's ``python`` blocks and
``axio-context`` command lines (see :mod:`tests.docs.markdown_blocks`), and examples/*.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .markdown_blocks import ROOT, Block, blocks, commands, environment, run_doc, runs_cli

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

#: Docs that must hold at least one runnable example (the tour, and pages that show commands).
MUST_RUN = {"README.md", "search.md", "compaction.md", "storage.md", "faults.md", "axio-migration.md"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_example_of_a_doc_runs(doc: Path, tmp_path: Path) -> None:
    ran = run_doc(doc, tmp_path)
    if doc.name in MUST_RUN:
        assert ran > 0, f"{doc.name} has no runnable example"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_every_example_script_runs(script: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=environment(tmp_path), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), f"{script.name} printed nothing"


def test_the_readme_opens_with_the_two_setup_commands_ci_runs() -> None:
    first = blocks(ROOT / "README.md")[0]
    assert first.lang == "bash"
    setup = [c.line for c in commands(first)]
    assert setup == ["pip install . && axio-context list-sessions", "pip install -e '.[dev]' && pytest"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert all(line in ci for line in setup), "README's set-up commands and .ci/run disagree"


def test_the_readme_tour_writes_where_the_command_line_reads() -> None:
    readme = blocks(ROOT / "README.md")
    assert any(b.lang == "python" for b in readme)
    shown = [c.line for b in readme if runs_cli(b) for c in commands(b)]
    for command in ("list-sessions", "show", "search", "export", "import"):
        assert any(f" {command} " in f"{line} " for line in shown), command
    # no --db and no $AXIO_CONTEXT_DB before the first listing: it reads the default file
    assert shown[0] == "axio-context list-sessions"


def test_the_block_reader_finds_commands_and_their_output() -> None:
    block = Block("console", "$ axio-context a\none\ntwo\n$ axio-context b\n", 1)
    assert [(c.line, c.expected) for c in commands(block)] == [
        ("axio-context a", "one\ntwo"),
        ("axio-context b", ""),
    ]
    assert runs_cli(block)
    assert not runs_cli(Block("bash", "pip install .\n", 1))
