"""Files written next to the database (``export -o``, ``backup``): never the database's own
files, never half-written, and an open descriptor written through rather than replaced.

**What a kill leaves.** The output is written to a hidden owner-only file beside the
destination, ``.<name>.<pid>.<random>.partial`` (a backup's may have SQLite's ``-journal``
beside it), renamed over the destination only once complete. A process killed before that
(SIGKILL, a power cut) leaves the destination as it was and that partial file behind. The next
``export -o`` or ``backup`` to the same destination removes such partials (:func:`remove_stale`):
only those of that destination, only ours (same owner), and only stale ones, whose writing
process is gone (the pid in the name runs no more). A partial of a write still running, in this
process or another, is never touched; partials named before this scheme (no pid) are left alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final

from axio_context.errors import DatabaseError, DestinationExistsError

#: The files SQLite keeps beside a database; writing over one of them damages the database.
SIDE_SUFFIXES: Final = ("-wal", "-shm", "-journal")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def output_target(dest: Path, database: Path) -> Path:
    """Where writing ``dest`` lands, symlinks followed (so a link stays a link and its target gets
    the content); refuses the database and its side files, which an output would destroy."""
    dest = dest.expanduser()
    target = Path(os.path.realpath(dest))
    db = Path(os.path.realpath(database.expanduser()))
    for suffix in ("", *SIDE_SUFFIXES):
        side = db.with_name(db.name + suffix)
        if target == side or _same_file(dest, side):
            what = "the database itself" if not suffix else f"the database's {suffix} file"
            raise DestinationExistsError(f"{dest} is {what}")
    return target


#: ``/dev/stdout`` and the like name the process's own descriptors 0-2.
_STANDARD: Final = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
#: A descriptor of a process, with symlinks in its folder resolved (``/dev/fd`` and ``/proc/self``
#: are links to ``/proc/<pid>``): ``/proc/<pid>/fd/N`` or ``/proc/<pid>/task/<tid>/fd/N``.
_PROC_FD: Final = re.compile(r"/proc/(\d+)(?:/task/\d+)?/fd/(.*)")


def descriptor(dest: Path) -> int | Path | None:
    """What ``dest`` names when it is an open descriptor rather than a file: the number of one of
    ours (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``, or a link to one), the path of
    another process's (``/proc/<pid>/fd/N``); None for anything else.

    Such a path resolves to whatever the descriptor is open on, a regular file when the shell
    redirected to one (``>> log.txt``): replacing that file would destroy what it held.
    """
    path = os.path.abspath(dest.expanduser())
    for _ in range(40):  # the kernel's limit on links followed
        folder = os.path.realpath(os.path.dirname(path))
        path = os.path.join(folder, os.path.basename(path))
        if path in _STANDARD:
            return _STANDARD[path]
        m = _PROC_FD.fullmatch(path)
        if m is not None:
            if int(m.group(1)) == os.getpid() and m.group(2).isdigit():
                return int(m.group(2))
            return Path(path)
        try:
            link = os.readlink(path)
        except OSError:
            return None
        path = os.path.normpath(os.path.join(folder, link))
    return None


@contextlib.contextmanager
def _through_descriptor(dest: Path, fd: int | Path) -> Iterator[BinaryIO]:
    """Write an open descriptor's file as it is open: one of ours through a duplicate of it (the
    shell's ``>>`` appends, its ``>`` writes on from where it is); another process's appended to
    (opening it again must not truncate it)."""
    if isinstance(fd, Path):
        number = os.open(fd, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    else:
        try:
            number = os.dup(fd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(dest)) from None
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # what was printed first comes first
    try:
        if stat.S_ISDIR(os.fstat(number).st_mode):
            raise IsADirectoryError(21, "Is a directory", str(dest))
    except BaseException:
        os.close(number)
        raise
    # unbuffered, like the temporary file: a failed write fails there, not again at close
    with os.fdopen(number, "wb", buffering=0) as direct:
        yield direct


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts: it may still be writing)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_stale(target: Path) -> list[Path]:
    """Remove the partial files an earlier export or backup to ``target`` left when it was killed
    (see the module docstring for which count as stale); returns those removed."""
    pattern = re.compile(
        re.escape(f".{target.name}.") + r"(\d+)\.[A-Za-z0-9_]+\.partial(?:-journal|-wal|-shm)?"
    )
    removed: list[Path] = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or _alive(int(m.group(1))):
            continue
        path = target.parent / name
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
                path.unlink()
                removed.append(path)
    return removed


def temporary_beside(target: Path) -> tuple[int, Path]:
    """An empty owner-only (0600) file in ``target``'s folder, to be renamed over it when done,
    named with this process's id (stale ones of ``target`` are removed first); a file ``target``
    that already exists lends it its mode."""
    remove_stale(target)
    try:
        fd, name = tempfile.mkstemp(
            prefix=f".{target.name}.{os.getpid()}.", suffix=".partial", dir=target.parent
        )
    except FileNotFoundError as exc:
        if not target.parent.is_dir():
            raise FileNotFoundError(2, "No such folder", str(target.parent)) from None
        # the folder is there but takes no new file (/proc): the file is written whole or not at all
        raise OSError(
            exc.errno, f"cannot write it: its folder takes no new file ({exc.strerror})", str(target)
        ) from None
    with contextlib.suppress(FileNotFoundError):
        os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
    return fd, Path(name)


@contextlib.contextmanager
def writing(dest: Path, database: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``dest`` through, never leaving it half-written.

    A regular (or missing) file is written to a temporary file beside it, synced, and renamed
    over it only when the block succeeds (removed when it fails); a symlink's target is the file
    replaced. A FIFO or device is written directly: it cannot be replaced. An open descriptor
    (``/dev/stdout``, ``/dev/fd/N``, ``/proc/<pid>/fd/N``) is written through, whatever it is
    open on, never replaced (see :func:`descriptor`). New files are owner-only (0600), like the
    database; a missing folder is created (as backup and import do). Refuses the database's own files.
    """
    dest = dest.expanduser()
    target = output_target(dest, database)
    fd = descriptor(dest)
    if fd is not None:
        with _through_descriptor(dest, fd) as direct:
            yield direct
        return
    try:
        mode: int | None = os.stat(dest).st_mode  # through links, as opening it would go
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory", str(dest))
    if mode is not None and not stat.S_ISREG(mode):
        # unbuffered, like the temporary file: a failed write fails there, not again at close
        with open(dest, "wb", buffering=0) as direct:
            yield direct
        return
    target.parent.mkdir(parents=True, exist_ok=True)  # as backup and import do
    fd, temp = temporary_beside(target)
    try:
        with os.fdopen(fd, "wb", buffering=0) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def removed_if_failed(path: Path) -> Iterator[Path]:
    """For a command that may create the database at ``path``: if the block fails, a database it
    created (with its side files, and the folders made for it) is removed again, so a mistyped
    ``--db`` leaves nothing behind. Yields ``path`` resolved once: a symlink whose target is
    missing names the file to create (and to remove again), never the link itself."""
    target = Path(os.path.realpath(path.expanduser()))
    absent = [p for p in (target, *target.parents) if not p.exists()]
    try:
        yield target
    except BaseException:
        if absent and absent[0] == target:
            for suffix in ("", *SIDE_SUFFIXES):
                Path(f"{target}{suffix}").unlink(missing_ok=True)
            for folder in absent[1:]:  # the deepest first; one holding anything else stays
                with contextlib.suppress(OSError):
                    folder.rmdir()
        raise


def backup(c: Any, source: Path, dest: Path, overwrite: bool) -> None:
    """Copy the database to ``dest`` with SQLite's online backup API (one consistent snapshot).

    The copy is made in one step, so it holds one read snapshot while other connections write.
    It is written to an owner-only temporary file beside ``dest`` and renamed over it only once
    complete, so a failed backup (a full disk) leaves an existing ``dest`` as it was. The backup
    of an encrypted database is encrypted under the same key (SQLCipher copies between files of
    one key only).
    """
    from ..store.driver import driver_errors
    from ..store.files import connect_raw

    dest = dest.expanduser()
    target = output_target(dest, source)
    try:
        mode: int | None = os.stat(dest).st_mode
    except FileNotFoundError:
        mode = None
    if (mode is not None and not stat.S_ISREG(mode)) or descriptor(dest) is not None:
        raise DestinationExistsError(f"{dest} is not a regular file")
    if mode is not None and not overwrite:
        raise DestinationExistsError(f"{dest} already exists; use --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = temporary_beside(target)
    os.close(fd)
    try:
        copy = connect_raw(str(temp), getattr(c, "cipher_key", None), isolation_level=None)
        try:
            c.backup(copy)
        finally:
            copy.close()
        # A -wal or -journal left beside the file replaced would be replayed into the copy.
        for suffix in SIDE_SUFFIXES:
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        os.replace(temp, target)
    except BaseException as exc:
        for suffix in ("", *SIDE_SUFFIXES):
            temp.with_name(temp.name + suffix).unlink(missing_ok=True)
        if isinstance(exc, driver_errors()):
            raise DatabaseError(f"cannot write the backup {dest}: {exc}") from None
        raise
