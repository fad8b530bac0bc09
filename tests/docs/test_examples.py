"""Every example in the docs runs as written, each alone: the README's and docs/*.md's ``python``
blocks and command lines (see :mod:`tests.docs.markdown_blocks`), and examples/*.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .markdown_blocks import (
    ROOT,
    Block,
    blocks,
    chain,
    commands,
    declared_extras,
    environment,
    extras_named,
    handling,
    run_block,
    runs_cli,
)

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

#: Docs that must hold at least one runnable example (the tour, and pages that show commands).
MUST_RUN = {
    "README.md",
    "search.md",
    "compaction.md",
    "storage.md",
    "faults.md",
    "axio-migration.md",
    "cli.md",
}

BLOCKS = [(doc, block) for doc in DOCS for block in blocks(doc)]
RUN = [(doc, block) for doc, block in BLOCKS if handling(block) == "run"]


@pytest.mark.parametrize(("doc", "block"), RUN, ids=[f"{d.name}:{b.line}" for d, b in RUN])
def test_every_block_runs_alone(
    doc: Path, block: Block, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    def pg_url() -> str:
        from tests.support.postgres import new_database

        return new_database(request.getfixturevalue("pg_server"), "docs")

    run_block(doc, block, tmp_path, pg_url)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_block_of_a_doc_is_run_or_checked(doc: Path) -> None:
    """No block is left out: a ``text`` block, or a command the test cannot run, fails here
    (show output under a ``$ `` command of a ``console`` block instead)."""
    found = blocks(doc)
    left = [f"{doc.name}:{b.line} ({b.lang or 'no language'})" for b in found if handling(b) == "unhandled"]
    assert left == []
    for b in found:
        chain(doc, b)  # every after= names a block
    if doc.name in MUST_RUN:
        assert any(handling(b) == "run" for b in found), f"{doc.name} has no runnable example"


def test_every_extra_an_install_line_names_exists() -> None:
    extras = declared_extras()
    named = [
        (f"{d.name}:{b.line}", e) for d, b in BLOCKS if handling(b) == "install" for e in extras_named(b)
    ]
    assert named, "no install line names an extra"
    assert [(where, e) for where, e in named if e not in extras] == []


def test_every_json_block_parses() -> None:
    import json

    parsed = [json.loads(b.text) for _, b in BLOCKS if handling(b) == "parse"]
    assert parsed, "no json block"


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
    tour = [b for b in readme if b.attrs.get("name") == "tour"]
    assert len(tour) == 1 and tour[0].lang == "python"
    shown = [c.line for b in readme if runs_cli(b) and b.attrs.get("after") == "tour" for c in commands(b)]
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
    assert handling(Block("bash", "pip install '.[postgres]'\n", 1)) == "install"
    assert handling(Block("text", "anything\n", 1)) == "unhandled"
    assert handling(Block("json", "{}\n", 1)) == "parse"
    assert handling(Block("console", "$ curl example.org\n", 1)) == "unhandled"
    assert runs_cli(Block("console", "$ AXIO_CONTEXT_DB=x.db axio-context stats\n", 1))


def test_a_block_runs_alone_after_only_what_it_names(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```python name=make\nopen('made.txt', 'w').write('x')\n```\n\n"
        "```python\nopen('made.txt').read()\n```\n\n"
        "```python after=make\nassert open('made.txt').read() == 'x'\n```\n",
        encoding="utf-8",
    )
    make, alone, after = blocks(doc)
    assert after.attrs == {"after": "make"} and [b.line for b in chain(doc, after)] == [make.line, after.line]
    for block, home in ((make, "a"), (after, "c")):
        (tmp_path / home).mkdir()
        run_block(doc, block, tmp_path / home)
    (tmp_path / "b").mkdir()
    with pytest.raises(AssertionError, match="the python block failed"):
        run_block(doc, alone, tmp_path / "b")  # what another block made is not there
