"""The shape of the packages, held by a test: modules stay small, imports form no circle, the
command line holds no SQL, and no module takes another module's private names.

Read statically (the files' text and their imports), so a regression shows up as a failing test
rather than in a review.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "axio_context",
    "axio_context_sqlite",
    "axio_context_postgres",
    "axio_context_openai_agents",
    "axio_context_pydantic_ai",
    "axio_context_mcp",
)
#: The core's modules that hold the layers' plans (SQL written once for every backend).
PLANS = re.compile(r"(/sql/|/sql\.py$|_sql\.py$|/stored\.py$|^axio_context/lineage\.py$)")
#: A module past this many lines usually holds two ideas.
MAX_LINES = 420
#: Statements that only the store and search packages may hold.
SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX))\b",
    re.S,
)


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


def imported(name: str, path: Path, tree: ast.Module) -> set[str]:
    """The project modules a module imports, at its top or inside a function (a late import
    hides a circle from Python, not from a reader)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_module_is_too_long() -> None:
    long = {name: n for name, path in modules() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_imports_form_no_circle() -> None:
    known = dict(modules())
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        graph[name] = {t for t in imported(name, path, tree) if t in known and t != name}
    # a package's __init__ importing its own modules is not a circle through them
    for name in graph:
        graph[name] = {
            t for t in graph[name] if not (name.startswith(t + ".") and known[t].name == "__init__.py")
        }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def _string(node: ast.AST) -> str | None:
    """A string literal's text; an f-string's literal parts joined around its fields."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " x ".join(
            v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    return None


@pytest.mark.parametrize(
    "package",
    ["axio_context", "axio_context_sqlite.cli", "axio_context_sqlite.admin", "axio_context_sqlite.tui"],
)
def test_no_sql_outside_the_data_packages(package: str) -> None:
    """SQL lives in the packages that own tables (store, search, the memory stores, PostgreSQL's)
    and, in the core, only in the layers' plans written once for every backend (modules named
    for it: a ``sql`` package, ``*_sql.py``/``sql.py``, a layer's ``stored.py``, the lineage
    checks); the rest of the core, the command line and the whole-database jobs (admin) call them."""
    where = ROOT.joinpath(*package.split("."))
    holding = []
    for path in sorted(where.rglob("*.py")):
        if package == "axio_context" and PLANS.search(path.relative_to(ROOT).as_posix()):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            text = _string(node)
            if text is not None and SQL.search(text):
                holding.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not holding, f"SQL in {package}: {holding}"


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_takes_another_modules_private_names() -> None:
    known = {name.rpartition(".")[2] for name, _ in modules()}
    reaching = []
    for name, path in modules():
        tree = ast.parse(path.read_text())
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                reaching += [f"{name} <- {node.module}.{a.name}" for a in node.names if private(a.name)]
                aliases |= {a.asname or a.name for a in node.names if a.name in known}
        reaching += [
            f"{name} <- {node.value.id}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and private(node.attr)
        ]
    assert not reaching, f"private names imported across modules: {reaching}"


def test_every_bench_script_imports_and_the_mechanism_table_finds_its_definitions() -> None:
    """The bench names the library's definitions it switches off and counts: a move or rename in
    the library must not leave a bench that no longer runs."""
    import importlib

    bench_dir = Path(__file__).resolve().parents[2] / "bench"
    other_interpreters = {"__init__", "worker_pygents"}  # pygents' worker runs in its own 3.12 venv
    for script in sorted(bench_dir.glob("*.py")):
        if script.stem not in other_interpreters:
            importlib.import_module(f"bench.{script.stem}")
    mechanisms = importlib.import_module("bench.bench_mechanisms")
    lines = {name: mechanisms.lines_of(name) for name in mechanisms.DEFINITIONS}
    assert set(lines) == {"inline", "chunks", "fts queue", "binary codes"}
    assert all(n > 20 for n in lines.values()), lines
    # removed mechanisms cannot be switched on any more: their figures stay as a fixed record
    assert set(mechanisms.REMOVED) == {"checkpointer", "dictionaries"}
    assert "| dictionaries | 235 | file after append 2,000 |" in mechanisms.removed_table()
