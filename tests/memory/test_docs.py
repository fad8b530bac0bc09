"""docs/memory.md stays true: its tour snippet runs, and every memory command is documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click

from axio_context_sqlite.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "memory.md"


def _snippet() -> str:
    """The marked README tour snippet's text (code and the sentence after it)."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(
        r"<!-- README tour snippet \(start\) -->\n(.*?)<!-- README tour snippet \(end\) -->", text, re.S
    )
    assert m, "the README tour snippet markers are missing"
    return m.group(1)


def _code(snippet: str) -> str:
    m = re.search(r"```python\n(.*?)```", snippet, re.S)
    assert m, "the README tour snippet has no python block"
    return m.group(1)


def test_tour_snippet_runs(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _code(_snippet())],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "faq-1 ['acme', 'ann'] ['research', 'write']"
    assert (tmp_path / "agent.db").is_file()


def test_tour_snippet_names_the_commands() -> None:
    # What tests/cli/test_search.py::test_every_command_is_in_the_readme will look for once the
    # snippet is in the README.
    snippet = _snippet()
    for name in ("collections", "blobs", "graph", "tasks"):
        assert f"axio-context {name}" in snippet or f"`{name}`" in snippet


def test_every_memory_command_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in ("collections", "blobs", "graph", "tasks"):
        group = cli.commands[name]
        assert f"`axio-context {name}" in text
        assert isinstance(group, click.Group)
        for sub in group.commands:
            assert f"`axio-context {name} {sub}" in text, f"{name} {sub} is not in docs/memory.md"
