"""The schema's migrations: one ordered list of named steps, read from ``schema.sql``.

``schema.sql`` (the one source of the DDL) is a list of ``-- version: N name`` sections; each is
one step. A step is SQL statements and, where SQL alone cannot do the job, data steps: a
``-- python: function_name`` line runs that function (registered in :data:`DATA_STEPS`) at that
point of the step. A database records its version in ``PRAGMA user_version``; opening it runs
each missing step in its own ``BEGIN IMMEDIATE`` transaction together with the version bump, so
an upgrade is all or nothing and two processes opening the same old file never both run it. A
database newer than this code is refused, naming both versions.

Our databases carry :data:`APPLICATION_ID` in SQLite's header (``PRAGMA application_id``), so a
file of another application is recognised and left alone (:func:`check_owner`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

from axio_context.errors import SchemaVersionError

from ..errors import ForeignDatabaseError
from .indexing import index_all_messages, reindex_provider_text

__all__ = [
    "APPLICATION_ID",
    "DATA_STEPS",
    "SCHEMA_VERSION",
    "Migration",
    "actions_of",
    "apply_schema",
    "check_owner",
    "is_empty",
    "mark",
    "migrations",
    "refuse_newer",
    "schema_text",
]

#: SQLite's ``application_id`` of an axio-context database: the bytes "AXCT" (0x41584354).
APPLICATION_ID: Final = 0x41584354

#: Tables every version of our schema has: a file holding them is ours even before version 6
#: recorded :data:`APPLICATION_ID`.
_OUR_TABLES: Final = frozenset({"sessions", "messages", "checkpoints", "settings"})

_SECTION = re.compile(r"^-- version: (\d+)(?:[ \t]+(\w+))?[ \t]*$", re.MULTILINE)
_PYTHON = re.compile(r"^-- python: (\w+)\s*$")


def _index_existing_text(raw: Any) -> None:
    """Put every message stored before version 2 into the keyword index."""
    index_all_messages(raw, provider_text=False)


#: Data steps a ``-- python: name`` line of ``schema.sql`` may run, by name.
DATA_STEPS: Final[dict[str, Callable[[Any], None]]] = {
    "index_existing_text": _index_existing_text,
    "reindex_provider_text": reindex_provider_text,
}


@dataclass(frozen=True)
class Migration:
    """One step: the version it brings the database to, its name, and its actions in order
    (SQL statements as text, data steps as functions of the driver connection)."""

    version: int
    name: str
    actions: tuple[str | Callable[[Any], None], ...]


@cache
def schema_text() -> str:
    """The text of ``schema.sql``: the installed copy, or the repository's in a source checkout."""
    packaged = resources.files("axio_context_sqlite").joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "schema.sql").read_text(encoding="utf-8")


@cache
def migrations() -> tuple[Migration, ...]:
    """Every step of ``schema.sql`` in order; versions are 1, 2, ... with no gaps."""
    text = schema_text()
    marks = list(_SECTION.finditer(text))
    steps: list[Migration] = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        version = int(mark.group(1))
        steps.append(
            Migration(version, mark.group(2) or f"version_{version}", actions_of(text[mark.end() : end]))
        )
    if [s.version for s in steps] != list(range(1, len(steps) + 1)):
        raise RuntimeError(f"schema.sql versions must be 1..N in order, found {[s.version for s in steps]}")
    return tuple(steps)


def _version(raw: Any) -> int:
    return int(raw.execute("PRAGMA user_version").fetchone()[0])


def is_empty(raw: Any) -> bool:
    """Whether the database holds nothing at all yet (a new or zero-length file)."""
    return int(raw.execute("PRAGMA page_count").fetchone()[0]) == 0


def check_owner(raw: Any, path: str = "") -> None:
    """Refuse with :class:`ForeignDatabaseError` an SQLite file that another application owns.

    Ours: our :data:`APPLICATION_ID`, or our tables (a database from before version 6), or
    nothing at all (an empty file, or one whose first opening stopped before its first table).
    Reads only, so it runs before anything that could write (even ``PRAGMA journal_mode``).
    """
    app = int(raw.execute("PRAGMA application_id").fetchone()[0])
    if app == APPLICATION_ID or is_empty(raw):
        return
    names = {str(r[0]) for r in raw.execute("SELECT name FROM sqlite_master")}
    if app == 0 and (names >= _OUR_TABLES or (not names and _version(raw) == 0)):
        return
    where = path or "the database"
    owner = f"application id {app:#x}" if app else "another schema"
    raise ForeignDatabaseError(
        f"{where} is an SQLite database of another application ({owner}), not axio-context's; left unchanged"
    )


def mark(raw: Any) -> None:
    """Record :data:`APPLICATION_ID` (a database of ours from before it had one)."""
    if int(raw.execute("PRAGMA application_id").fetchone()[0]) != APPLICATION_ID:
        raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def refuse_newer(raw: Any, path: str = "") -> int:
    """The database's schema version; :class:`SchemaVersionError` if it is newer than this code's.

    Run it before anything that could write to the file (even ``PRAGMA journal_mode``).
    """
    found = _version(raw)
    if found > SCHEMA_VERSION:
        where = f" {path}" if path else ""
        raise SchemaVersionError(
            f"database{where} has schema version {found}, newer than the {SCHEMA_VERSION} this "
            "axio-context supports; upgrade axio-context to open it"
        )
    return found


def apply_schema(raw: Any, *, readonly: bool = False, path: str = "") -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; returns the version found before."""
    where = f" {path}" if path else ""
    steps = migrations()
    latest = len(steps)
    found = refuse_newer(raw, path)
    if readonly:
        if found < latest:
            raise SchemaVersionError(
                f"database{where} has schema version {found} and needs an upgrade to {latest}, "
                "which a read-only connection cannot do; open it once for writing"
            )
        return found
    for step in steps[found:]:
        _run_step(raw, step)
    mark(raw)  # a current database loaded from a dump (which keeps no header fields)
    return found


def _run_step(raw: Any, step: Migration) -> None:
    """One step and its version bump in one transaction (skipped if another process ran it)."""
    raw.execute("BEGIN IMMEDIATE")
    try:
        if _version(raw) >= step.version:  # another process upgraded meanwhile
            raw.execute("ROLLBACK")
            return
        for action in step.actions:
            if isinstance(action, str):
                raw.execute(action)
            else:
                action(raw)
        raw.execute(f"PRAGMA user_version = {step.version}")
        raw.execute("COMMIT")
    except BaseException:
        # SQLite rolls back by itself on some errors (a full disk): a second ROLLBACK would
        # hide the error that matters behind "no transaction is active".
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise


def actions_of(sql: str) -> tuple[str | Callable[[Any], None], ...]:
    """Split a section into statements (``complete_statement`` handles triggers' inner ``;``)
    and data steps (``-- python: name`` lines), in order."""
    import sqlean

    out: list[str | Callable[[Any], None]] = []
    buf = ""
    for line in sql.splitlines(keepends=True):
        if not buf:
            data = _PYTHON.match(line.strip())
            if data is not None:
                if data.group(1) not in DATA_STEPS:
                    raise RuntimeError(f"schema.sql names an unknown data step {data.group(1)!r}")
                out.append(DATA_STEPS[data.group(1)])
                continue
            if not line.strip() or line.lstrip().startswith("--"):
                continue
        buf += line
        if sqlean.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        raise RuntimeError(f"schema.sql has an unterminated statement: {buf.strip()[:60]!r}")
    return tuple(out)


#: The version this code brings every database to: the number of steps.
SCHEMA_VERSION: Final = len(migrations())
