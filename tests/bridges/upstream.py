"""openai-agents' own session tests, from the source distribution of the pinned version, made to
run against :class:`~axio_context_openai_agents.AxioContextSession`.

The sdist is fetched once (``pip download --no-binary :all: --no-deps``) into a cache directory
(``$AXIO_CONTEXT_TEST_CACHE``, else ``~/.cache/axio-context-tests``); its
``tests/memory/test_session.py``, ``tests/memory/test_session_limit.py`` and the helpers they
import (``tests/test_responses.py``) are copied into a package ``oa_upstream`` there, with
``SQLiteSession`` bound to :class:`SQLiteSession` below and the ``tests.`` imports pointed at the
copies. Nothing else in them is changed.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from agents import SessionSettings

from axio_context_openai_agents import AxioAdvancedSession, AxioContextSession

VERSION = "0.24.0"
FILES = {
    "tests/memory/test_session.py": "test_session.py",
    "tests/memory/test_session_limit.py": "test_session_limit.py",
    "tests/test_responses.py": "test_responses.py",
    "tests/extensions/memory/test_encrypt_session.py": "test_encrypt_session.py",
    "tests/extensions/memory/test_advanced_sqlite_session.py": "test_advanced_sqlite_session.py",
    "tests/utils/hitl.py": "hitl.py",
}


#: While set (see :func:`use_postgres`), every session the upstream tests make lives in this
#: PostgreSQL database instead of the file they name.
_postgres_url: str | None = None


def use_postgres(url: str | None) -> None:
    """Run the upstream tests' sessions in the PostgreSQL database at ``url`` (None: files)."""
    global _postgres_url
    _postgres_url = url


class SQLiteSession(AxioContextSession):
    """openai-agents' ``SQLiteSession`` constructor over our session: ``db_path`` defaults to a
    private database, as its ``":memory:"`` does; the table names have no meaning here. Under
    :func:`use_postgres` the database is the test's own PostgreSQL one, whatever it names."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        where = db_path if _postgres_url is None else _postgres_url
        super().__init__(session_id, where, session_settings=session_settings)


class AdvancedSQLiteSession(AxioAdvancedSession):
    """openai-agents' ``AdvancedSQLiteSession`` constructor over our advanced session, as
    :class:`SQLiteSession` above (``create_tables`` and the table names have no meaning here)."""

    def __init__(
        self,
        *,
        session_id: str,
        db_path: str | Path = ":memory:",
        create_tables: bool = False,
        logger: Any = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        where = db_path if _postgres_url is None else _postgres_url
        super().__init__(session_id, where, logger=logger, session_settings=session_settings)


def cache_dir() -> Path:
    root = os.environ.get("AXIO_CONTEXT_TEST_CACHE") or os.path.join(
        Path.home(), ".cache", "axio-context-tests"
    )
    return Path(root) / f"openai-agents-{VERSION}"


def _patch(text: str) -> str:
    text = text.replace("from tests.test_responses import", "from oa_upstream.test_responses import")
    text = text.replace("from tests.memory.test_session import", "from oa_upstream.test_session import")
    text = text.replace("from tests.utils.hitl import", "from oa_upstream.hitl import")
    # The session classes under test: ours, in place of openai-agents' SQLiteSession and
    # AdvancedSQLiteSession (imported on one line or in parentheses).
    one_line = r"^(from agents(?:\.extensions\.memory)? import [^(\n]*\b(?:Advanced)?SQLiteSession\b[^\n]*)$"
    text, _ = re.subn(one_line, _rebind, text, flags=re.M)
    text, _ = re.subn(r"^(from agents import \([^)]*\bSQLiteSession\b[^)]*\))$", _rebind, text, flags=re.M)
    return text


def _rebind(m: re.Match[str]) -> str:
    name = "AdvancedSQLiteSession" if "AdvancedSQLiteSession" in m.group(1) else "SQLiteSession"
    return m.group(1) + f"\nfrom tests.bridges.upstream import {name}  # axio-context's session"


def ensure_upstream() -> Path:
    """The directory holding the ``oa_upstream`` package (fetched and patched on first use)."""
    base = cache_dir()
    package = base / "oa_upstream"
    if all((package / name).is_file() for name in FILES.values()):
        return base
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-binary",
                ":all:",
                "--no-deps",
                f"openai-agents=={VERSION}",
                "-d",
                tmp,
            ],
            check=True,
            capture_output=True,
        )
        [sdist] = Path(tmp).glob("*.tar.gz")
        with tarfile.open(sdist) as tar:
            prefix = tar.getnames()[0].split("/")[0]
            texts = {}
            for src, dst in FILES.items():
                member = tar.extractfile(f"{prefix}/{src}")
                assert member is not None, f"{src} is missing from the openai-agents {VERSION} sdist"
                texts[dst] = member.read().decode()
    if package.is_dir():  # an older cache with fewer files: each missing one added whole
        for name, text in texts.items():
            staged = package / f"{name}.{os.getpid()}"
            staged.write_text(_patch(text))
            staged.replace(package / name)
        return base
    staging = base / f"oa_upstream.{os.getpid()}"
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "__init__.py").write_text("")
    for name, text in texts.items():
        (staging / name).write_text(_patch(text))
    with contextlib.suppress(OSError):  # another run got there first
        staging.rename(package)  # atomic: a concurrent run sees all of it or none
    return base
