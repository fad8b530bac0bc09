"""The database file before SQLite opens it: creating it and the folders made for it owner-only,
the modes of its ``-wal``/``-shm`` files, opening an existing file read-only even where no
``-shm`` can be made, and removing the ``-wal``/``-shm`` a read-only open made.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, TypeVar

import sqlean

from .cipher import open_keyed, refuse_unkeyed
from .driver import driver_errors

__all__ = [
    "RawConnection",
    "connect_raw",
    "make_private_folders",
    "open_readonly",
    "prepare_file",
    "remove_side_files",
    "side_files",
]


class RawConnection(sqlean.Connection):  # type: ignore[misc]
    """The driver's connection, able to take attributes: what is kept per connection (semantic
    search's copy of the codes, :mod:`..search.codescan`) lives and goes with it."""


T = TypeVar("T")


def connect_raw(target: str, key: bytes | None, *, path: str | None = None, **options: Any) -> Any:
    """A driver connection to ``target``: sqlean's for a plain file, SQLCipher's under ``key``
    (:func:`.cipher.open_keyed`); ``path`` names the file in errors. Without a key, a file that
    looks encrypted is refused first with a one-line error (:func:`.cipher.refuse_unkeyed`)."""
    where = path or target
    if key is not None:
        return open_keyed(target, key, path=where, **options)
    refuse_unkeyed(where)
    return sqlean.connect(target, factory=RawConnection, **options)


def make_private_folders(folder: Path) -> None:
    """Create ``folder`` and any missing parent, each readable by its owner only (0700, whatever
    the umask), as the database in it is; a folder that exists keeps its mode."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another process: left as it is
            continue
        os.chmod(p, 0o700)  # mkdir's mode is masked by the umask


def prepare_file(path: Path, readonly: bool) -> None:
    if readonly:
        if not path.exists():
            from ..errors import DatabaseNotFoundError

            raise DatabaseNotFoundError(f"no database at {path}")
        return
    # A symlink is followed, as SQLite follows it: one whose target is missing has its target
    # created here, owner-only (O_EXCL on the link itself fails as if the file existed).
    target = Path(os.path.realpath(path))
    try:
        make_private_folders(target.parent)
    except OSError as exc:
        from ..errors import DatabaseOpenError

        raise DatabaseOpenError(f"cannot create the folder for {path}: {exc.strerror}") from None
    try:
        # A new database is readable by its owner only; SQLite gives -wal/-shm the same mode.
        fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        _restore_side_file_modes(target)
        return
    except OSError as exc:
        from ..errors import DatabaseOpenError

        raise DatabaseOpenError(f"cannot create database {path}: {exc.strerror}") from None
    os.close(fd)


def _restore_side_file_modes(path: Path) -> None:
    """Make ``-wal``/``-shm`` writable again where the database file is.

    SQLite gives them the database file's mode when it creates them; made while the file was
    read-only, they stay read-only after the file is writable again, and every later write fails
    as if the database were read-only. Changing their mode does not disturb open connections.
    """
    if not os.access(path, os.W_OK):
        return
    with contextlib.suppress(OSError):
        mode = path.stat().st_mode & 0o666
        for suffix in ("-wal", "-shm"):
            side = path.with_name(path.name + suffix)
            if side.exists() and not os.access(side, os.W_OK):
                os.chmod(side, mode)


def open_readonly(absolute: str, busy_timeout: float, key: bytes | None = None) -> Any:
    """A read-only driver connection to an existing database, even in a folder it cannot write.

    Reading a WAL database needs its ``-shm`` index, which SQLite cannot create in a read-only
    folder (a snapshot, a read-only mount, another user's folder). With no ``-wal`` content
    there, the file alone is the whole database and no writer can start one: it is opened
    ``immutable`` (no index, no locks). Committed changes still in a ``-wal`` cannot be read
    that way, so that case is a clear error instead of a stale view.
    """
    uri = Path(absolute).as_uri()

    def opened(options: str) -> Any:
        return connect_raw(
            f"{uri}?{options}",
            key,
            path=absolute,
            uri=True,
            isolation_level=None,
            timeout=busy_timeout,
            check_same_thread=False,
        )

    raw = None
    try:
        raw = opened("mode=ro")
        raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return raw
    except driver_errors("OperationalError") as exc:
        if raw is not None:
            raw.close()
        low = str(exc).lower()
        if "readonly" not in low and "read-only" not in low and "unable to open" not in low:
            raise
    wal = Path(absolute + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        from ..errors import ReadOnlyDatabaseError

        raise ReadOnlyDatabaseError(
            f"cannot read {absolute}: changes not yet copied from {wal.name} need a -shm file, "
            "which its read-only folder cannot hold; copy the database and its -wal file to a "
            "writable folder, or open it once where the folder is writable"
        )
    return opened("mode=ro&immutable=1")


def side_files(absolute: str) -> tuple[Path, Path]:
    """The ``-wal`` and ``-shm`` files of the database at ``absolute``."""
    return Path(absolute + "-wal"), Path(absolute + "-shm")


def remove_side_files(absolute: str, key: bytes | None = None) -> None:
    """After a read-only connection closed that found no ``-wal``/``-shm`` beside the database:
    remove the ones reading it made, as SQLite does when the last connection to a WAL database
    closes (a read-only one cannot: it may not checkpoint). A plain connection is opened and
    closed: under SQLite's own locks it deletes both only if no other connection has the
    database open, and with an empty WAL its checkpoint writes nothing. Left alone when the WAL
    holds anything (a writer came meanwhile: its files) or the file or folder is not writable."""
    wal, shm = side_files(absolute)
    try:
        if not (wal.exists() or shm.exists()) or (wal.exists() and wal.stat().st_size > 0):
            return
    except OSError:
        return
    if not (os.access(absolute, os.W_OK) and os.access(os.path.dirname(absolute), os.W_OK)):
        return
    with contextlib.suppress(*driver_errors(), OSError):
        raw = connect_raw(absolute, key, isolation_level=None, timeout=0)
        try:
            raw.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads through the WAL index
        finally:
            raw.close()
