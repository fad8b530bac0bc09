"""Schema versions and upgrades, read from ``schema.sql`` (the one source of the schema).

``schema.sql`` is a list of ``-- version: N`` sections. A database records its version in
``PRAGMA user_version``; opening it runs each missing section in its own ``BEGIN IMMEDIATE``
transaction together with the version bump, so an upgrade is all or nothing and two processes
opening the same old file never both run it. A database newer than this code is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from axio_context.errors import SchemaVersionError

__all__ = ["SCHEMA_VERSION", "apply_schema", "refuse_newer", "schema_sections", "schema_text"]

_SECTION = re.compile(r"^-- version: (\d+)\s*$", re.MULTILINE)


@cache
def schema_text() -> str:
    """The text of ``schema.sql``: the installed copy, or the repository's in a source checkout."""
    packaged = resources.files("axio_context_sqlite").joinpath("schema.sql")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "schema.sql").read_text(encoding="utf-8")


@cache
def schema_sections() -> dict[int, str]:
    """``{version: SQL}`` in order; versions are 1, 2, ... with no gaps."""
    text = schema_text()
    marks = list(_SECTION.finditer(text))
    sections: dict[int, str] = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        sections[int(mark.group(1))] = text[mark.end() : end]
    if list(sections) != list(range(1, len(sections) + 1)):
        raise RuntimeError(f"schema.sql versions must be 1..N in order, found {list(sections)}")
    return sections


SCHEMA_VERSION = max(schema_sections())


def _version(raw: Any) -> int:
    return int(raw.execute("PRAGMA user_version").fetchone()[0])


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
    found = refuse_newer(raw, path)
    if found == SCHEMA_VERSION or readonly:
        if readonly and found < SCHEMA_VERSION:
            raise SchemaVersionError(
                f"database{where} has schema version {found} and needs an upgrade to {SCHEMA_VERSION}, "
                "which a read-only connection cannot do; open it once for writing"
            )
        return found
    for version, sql in schema_sections().items():
        raw.execute("BEGIN IMMEDIATE")
        try:
            if _version(raw) >= version:  # another process upgraded meanwhile
                raw.execute("ROLLBACK")
                continue
            for statement in _statements(sql):
                raw.execute(statement)
            hook = _HOOKS.get(version)
            if hook is not None:
                hook(raw)
            raw.execute(f"PRAGMA user_version = {version}")
            raw.execute("COMMIT")
        except BaseException:
            # SQLite rolls back by itself on some errors (a full disk): a second ROLLBACK would
            # hide the error that matters behind "no transaction is active".
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise
    return found


def _index_existing_text(raw: Any) -> None:
    from .indexing import index_all_messages

    index_all_messages(raw)


#: Data migrations that SQL alone cannot do, run after their section in the same transaction.
_HOOKS: dict[int, Callable[[Any], None]] = {2: _index_existing_text}


def _statements(sql: str) -> list[str]:
    """Split a section into statements (``complete_statement`` handles triggers' inner ``;``)."""
    import sqlean

    out: list[str] = []
    buf = ""
    for line in sql.splitlines(keepends=True):
        if not buf and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buf += line
        if sqlean.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        raise RuntimeError(f"schema.sql has an unterminated statement: {buf.strip()[:60]!r}")
    return out
