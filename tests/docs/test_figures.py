"""Every table of measured figures says where they come from: the command that produced them, the
date, the machine (cores and load) and the commit, in the text just above it (as bench/FIGURES.md
does), or, for a summary whose rows come from different runs, in each row (the text above may give
what every row shares, such as the cores). A table is one of figures when at least two of its cells
are measurements (a number with or without a unit: ``308 us``, ``0.712``, ``1.52x FAIL``) or its
header names a statistic; a table that only looks like one (version numbers, limits) says so on the
line above it with ``<!-- not figures: why -->``. Tables indented inside a list count too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from .markdown_blocks import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench").glob("*.md"))]

_CELL = re.compile(
    r"^\**[~<>]?\s*\d[\d,.]*\s*(ms|us|µs|s|MB|MiB|KB|KiB|GB|x|%|k)?(\s*/\s*\d[\d,.]*)?\**( (PASS|FAIL))?$"
)
_STATISTIC = re.compile(r"\b(median|mean|p95|recall|MRR|per second|figure)\b", re.IGNORECASE)
_RULE = re.compile(r"^\|[\s:|-]+\|\s*$")
_FENCE = re.compile(r"^\s*```")

#: What the text above a table of figures (or each of its rows) must name.
NEEDS = {
    "the command (`python -m bench...` or another in backticks)": re.compile(r"`[^`]*(python|bench)[^`]*`"),
    "the date (YYYY-MM-DD)": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    "the cores": re.compile(r"\bcores?\b"),
    "the load": re.compile(r"\bload\b"),
    "the commit (in backticks)": re.compile(r"`[0-9a-f]{7,40}`"),
}


@dataclass(frozen=True)
class Table:
    page: Path
    line: int
    header: str
    rows: list[str]
    above: str  # the text from the previous heading or table down to this table

    @property
    def cells(self) -> list[str]:
        return [c.strip() for row in self.rows for c in row.strip().strip("|").split("|")]


def tables(page: Path) -> list[Table]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Table] = []
    start = 0  # where the text above the next table begins
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("#"):
            start = i
        if not fenced and line.startswith("|") and i + 1 < len(lines) and _RULE.match(lines[i + 1].strip()):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            rows = [row.strip() for row in lines[i + 2 : j]]
            found.append(Table(page, i + 1, line, rows, "\n".join(lines[start:i])))
            start, i = j, j
            continue
        i += 1
    return found


def of_figures(table: Table) -> bool:
    last = table.above.rstrip().splitlines()[-1].strip() if table.above.strip() else ""
    if last.startswith("<!-- not figures"):
        return False
    measured = sum(bool(_CELL.match(c)) for c in table.cells)
    return measured >= 2 or bool(_STATISTIC.search(table.header))


def missing(table: Table) -> list[str]:
    """What neither the text above the table nor every one of its rows names."""
    return [
        what
        for what, pattern in NEEDS.items()
        if not pattern.search(table.above) and not all(pattern.search(row) for row in table.rows)
    ]


FIGURES = [t for page in PAGES for t in tables(page) if of_figures(t)]


def test_the_pages_hold_tables_of_figures() -> None:
    assert len(FIGURES) >= 10
    assert {t.page.name for t in FIGURES} >= {"postgres.md", "search.md", "benchmarks.md", "FIGURES.md"}


@pytest.mark.parametrize("table", FIGURES, ids=[f"{t.page.name}:{t.line}" for t in FIGURES])
def test_every_table_of_figures_names_its_command_date_machine_and_commit(table: Table) -> None:
    assert missing(table) == [], f"{table.page.name}:{table.line} ({table.header[:60]}) lacks them"


def test_a_table_without_its_provenance_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "## Speed\n\nMeasured somewhere.\n\n"
        "| op | time |\n|---|---:|\n| append | 51 us |\n| load | 30 ms |\n\n"
        "## Quality\n\n`python -m bench.bench_search`, 2026-11-25, 2 cores (load 7), commit `583d3d3`:\n\n"
        "| set | recall |\n|---|---:|\n| a | 0.812 |\n| b | 0.790 |\n\n"
        "<!-- not figures: schema versions -->\n| version | adds |\n|---|---|\n| 1 | a |\n| 2 | b |\n\n"
        "- in a list, 2 cores:\n\n  | op | time | run |\n  |---|---:|---|\n"
        "  | a | 5 ms | `python -m bench.x`, 2026-11-26, load 3, `abcdef1` |\n"
        "  | b | 7 ms | `python -m bench.y`, 2026-11-26, load 4 |\n",
        encoding="utf-8",
    )
    speed, quality, versions, summary = tables(page)
    assert of_figures(speed) and of_figures(quality) and not of_figures(versions) and of_figures(summary)
    assert len(missing(speed)) == len(NEEDS)
    assert missing(quality) == []
    # a summary's rows may each carry their own run; a row without its commit is caught
    assert missing(summary) == ["the commit (in backticks)"]
