"""docs/storage.md's list of schema versions is generated from the migrations themselves
(``schema.sql``'s ``-- version: N name`` sections, as :func:`migrations` reads them) by
docs/gen_storage.py: a version added, renamed or dropped in the code and not in the doc fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from axio_context_sqlite.store.schema import SCHEMA_VERSION, migrations

from .markdown_blocks import ROOT


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_storage", ROOT / "docs" / "gen_storage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_migration_has_its_one_line_description_and_no_other_is_left() -> None:
    gen = generator()
    names = [step.name for step in migrations()]
    assert [n for n in names if n not in gen.DESCRIPTIONS] == [], "describe it in docs/gen_storage.py"
    assert [n for n in gen.DESCRIPTIONS if n not in names] == [], "a description of no migration"
    assert all("\n" not in line and "|" not in line for line in gen.DESCRIPTIONS.values())


def test_storage_md_lists_every_version_as_the_migrations_have_them() -> None:
    gen = generator()
    current = (ROOT / "docs" / "storage.md").read_text(encoding="utf-8")
    stale = "docs/storage.md's versions are stale: run `python docs/gen_storage.py`"
    assert current == gen.render(current), stale
    rows = [line for line in current.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert [int(row.split("|")[1]) for row in rows] == list(range(1, SCHEMA_VERSION + 1))
    assert f"`-- version: {SCHEMA_VERSION}`" in current  # the prose names the newest version


def test_a_migration_missing_from_the_doc_is_caught(tmp_path: Path) -> None:
    gen = generator()
    current = (ROOT / "docs" / "storage.md").read_text(encoding="utf-8")
    newest = migrations()[-1]
    row = f"| {newest.version} | `{newest.name}` | {gen.DESCRIPTIONS[newest.name]} |\n"
    stale = current.replace(row, "")
    assert stale != current
    assert gen.render(stale) == current
    page = tmp_path / "storage.md"
    page.write_text(stale, encoding="utf-8")
    assert gen.main(["gen_storage.py", "--check"], page) == 1
    assert page.read_text(encoding="utf-8") == stale  # --check writes nothing


def test_a_page_without_the_markers_is_refused() -> None:
    gen = generator()
    with pytest.raises(ValueError, match="markers"):
        gen.render("# Storage\n\nno versions here\n")
