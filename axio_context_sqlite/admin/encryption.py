"""Encrypting, decrypting and re-keying a database file in place, atomically.

The file is never changed where it lies: SQLCipher's ``sqlcipher_export`` writes the whole
database (FTS5 and sqlite-vec tables included) into a new file beside it under the new key (or
none), which is synced to disk and renamed over the old one. A crash at any instant (SIGKILL
included) leaves either the old file, readable under the old key, or the new one, complete under
the new key; a half-written ``<name>.converting`` left by a killed run is removed by the next.

Before copying, the file is switched out of WAL mode: that checkpoints and removes its ``-wal``
and ``-shm`` (a WAL of the old file must never meet the new one), and it fails while another
program has the database open, which is then a one-line error. A write lock is held during the
copy; a write slipping in between the copy and the rename is detected and nothing is replaced.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Final

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from axio_context.encryption import AlreadyEncryptedError, EncryptionKeyError, NotEncryptedError

from ..errors import DatabaseLockedError, DatabaseNotFoundError, translate_error
from ..store.cipher import cipher_module, is_plain_file, key_pragma
from ..store.driver import driver_errors
from ..store.files import connect_raw
from ..store.schema import check_owner
from ..store.vec import load_sqlite_vec

__all__ = ["CONVERTING_SUFFIX", "AlreadyEncryptedError", "convert_file"]

#: The suffix of the new file written beside the database while it is converted.
CONVERTING_SUFFIX: Final = ".converting"


def _check(path: Path, old: bytes | None, new: bytes | None) -> None:
    if old is None and new is None:
        raise EncryptionKeyError("no key given: encrypting, decrypting or re-keying needs one")
    if old is not None and old == new:
        raise EncryptionKeyError("the new key is the same as the current one")
    if not path.is_file() or path.stat().st_size == 0:
        raise DatabaseNotFoundError(f"no database at {path}")
    plain = is_plain_file(str(path))
    if old is None and not plain:
        raise AlreadyEncryptedError(f"{path} is encrypted already (rekey changes its key)")
    if old is not None and plain:
        raise NotEncryptedError(f"{path} is not encrypted (encrypt gives it a key)")


def _in_use_elsewhere(path: Path) -> bool:
    """Whether another process has the WAL database at ``path`` open: every connection to one holds
    a read lock on a byte of its ``-shm`` file (SQLite's "DMS" byte, offset 128, unix VFS). A
    connection of this process does not show (POSIX locks are per process); Windows is not asked."""
    if fcntl is None:
        return False
    try:
        fd = os.open(f"{path}-shm", os.O_RDWR)
    except OSError:
        return False  # no -shm: no connection in WAL mode
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, 128)
        return False
    finally:
        os.close(fd)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_into(src: Any, temp: Path, new: bytes | None) -> None:
    """Export the database ``src`` reads into the new file ``temp`` under ``new``, holding a write
    lock on the source from before the copy to after :func:`os.replace` would run (the caller's)."""
    version = int(src.execute("PRAGMA user_version").fetchone()[0])
    app = int(src.execute("PRAGMA application_id").fetchone()[0])
    vacuum = int(src.execute("PRAGMA auto_vacuum").fetchone()[0])
    target_key = key_pragma(new).split(" = ", 1)[1] if new is not None else "''"
    src.execute(f"ATTACH DATABASE ? AS converted KEY {target_key}", (str(temp),))
    try:
        src.execute(f"PRAGMA converted.auto_vacuum = {vacuum}")
        src.execute("BEGIN IMMEDIATE")
        seen = src.execute("PRAGMA data_version").fetchone()[0]
        try:
            src.execute("SELECT sqlcipher_export('converted')").fetchall()
            src.execute(f"PRAGMA converted.user_version = {version}")
            src.execute(f"PRAGMA converted.application_id = {app}")
            src.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(*driver_errors()):
                src.execute("ROLLBACK")
            raise
    finally:
        src.execute("DETACH DATABASE converted")
    # Took the write lock again at once: a write by another program since the copy shows in
    # data_version, and then the copy is stale.
    src.execute("BEGIN IMMEDIATE")
    if src.execute("PRAGMA data_version").fetchone()[0] != seen:
        raise DatabaseLockedError(
            "another program wrote to the database during the conversion; nothing was changed"
        )


def convert_file(path: str | os.PathLike[str], old: bytes | None, new: bytes | None) -> None:
    """Re-write the database at ``path`` from key ``old`` to key ``new`` (None: not encrypted):
    encrypt (``old`` None), decrypt (``new`` None) or rekey. Atomic: see the module's docstring."""
    path = Path(os.path.realpath(Path(path).expanduser()))
    _check(path, old, new)
    where = str(path)
    # Opened first through the usual path: a wrong key or another application's file is refused
    # with its own one-line error before anything is written.
    probe = connect_raw(where, old, isolation_level=None, timeout=5.0)
    try:
        check_owner(probe, where)
    finally:
        probe.close()
    if _in_use_elsewhere(path):
        raise DatabaseLockedError(
            f"{path} is in use by another program: close it, then convert the database again"
        )
    temp = path.with_name(path.name + CONVERTING_SUFFIX)
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(f"{temp}{suffix}").unlink(missing_ok=True)  # left by a conversion that was killed
    module = cipher_module()
    src = module.connect(where, isolation_level=None, timeout=5.0, check_same_thread=False)
    try:
        src.execute("PRAGMA cipher_log_level = NONE")
        if old is not None:
            src.execute(key_pragma(old))
        src.execute("PRAGMA temp_store = MEMORY")
        load_sqlite_vec(src)  # the vec0 tables are made again in the new file
        mode = str(src.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        if mode != "delete":
            raise DatabaseLockedError(
                f"{path} is in use by another program: close it, then convert the database again"
            )
        try:
            _copy_into(src, temp, new)
            _sync(temp)
            os.replace(temp, path)
            _sync(path.parent)
        except module.Error as exc:
            raise translate_error(exc, where) from None
    except BaseException:
        for suffix in ("", "-journal"):
            Path(f"{temp}{suffix}").unlink(missing_ok=True)
        raise
    finally:
        with contextlib.suppress(*driver_errors()):
            src.close()
