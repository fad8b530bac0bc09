"""Encrypted database files: SQLCipher (through ``sqlcipher3``, the ``encryption`` extra) opens a
file with a key, and every page of it, of its ``-wal`` and of its search indexes is AES-256
encrypted on disk; FTS5 and sqlite-vec run on it as on a plain file (docs/encryption.md has the
measured choice against encrypting payloads one by one).

The key is a raw 32-byte key (``PRAGMA key = "x'...'"``: no passphrase derivation, so opening
costs nothing extra), kept on the connection object in memory only. A key that does not fit the
file is told apart here from SQLite's bare "file is not a database": a plain file opened with a
key, an encrypted one opened without, and one encrypted under another key each get their own
one-line error.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any, Final

from axio_context.encryption import (
    EncryptionUnavailableError,
    KeyRequiredError,
    NotEncryptedError,
    WrongKeyError,
)

__all__ = [
    "CACHE_KIB",
    "SQLITE_MAGIC",
    "cipher_module",
    "is_plain_file",
    "key_pragma",
    "open_keyed",
    "refuse_unkeyed",
]

#: The first 16 bytes of every plain SQLite file (an encrypted one starts with a random salt).
SQLITE_MAGIC: Final = b"SQLite format 3\x00"

#: The page cache of an encrypted connection, in KiB. SQLCipher cannot read through a memory map
#: (pages are decrypted into the cache), so a plain connection's 1 GiB map is matched by a cache
#: large enough to keep a working set decrypted: a reload then costs no decryption. It grows only
#: as pages are read.
CACHE_KIB: Final = 65536

_HINT: Final = "--key-file, or $AXIO_CONTEXT_KEY / $AXIO_CONTEXT_KEY_FILE"


@cache
def cipher_module() -> Any:
    """The SQLCipher driver module (``sqlcipher3``); a one-line error naming the extra if missing."""
    try:
        import sqlcipher3  # type: ignore[import-untyped]
    except ImportError as exc:
        raise EncryptionUnavailableError(
            "a key was given but the encryption driver is not installed:"
            f" pip install 'axio-context[encryption]' ({exc})"
        ) from None
    return sqlcipher3


@cache
def _connection_class() -> type:
    module = cipher_module()

    class CipherConnection(module.Connection):  # type: ignore[misc,name-defined]
        """SQLCipher's connection, able to take attributes (the key, semantic search's codes)."""

    return CipherConnection


def key_pragma(key: bytes, schema: str = "") -> str:
    """The statement that gives a connection (or an attached ``schema``) its raw key."""
    prefix = f"{schema}." if schema else ""
    return f"PRAGMA {prefix}key = \"x'{key.hex()}'\""


def is_plain_file(path: str) -> bool | None:
    """Whether the file at ``path`` starts as a plain SQLite database does (None: empty or absent)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError:
        return None
    if not head:
        return None
    return head == SQLITE_MAGIC


def refuse_unkeyed(path: str) -> None:
    """Before opening ``path`` without a key: :class:`KeyRequiredError` if it looks encrypted (whole
    pages, no SQLite header); anything else is left to SQLite (a text file stays "not a database")."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return
    if size < 512 or size % 512 or is_plain_file(path) is not False:
        return
    with open(path, "rb") as f:
        head = f.read(64)
    if not any(head):  # zeros: not encrypted, just not a database
        return
    raise KeyRequiredError(f"{path} is encrypted: give its key ({_HINT})")


def _diagnosed(path: str, key: bytes) -> Exception:
    if is_plain_file(path):
        return NotEncryptedError(
            f"{path} is not encrypted but a key was given: open it without a key, or encrypt it first"
            " (axio-context encrypt)"
        )
    return WrongKeyError(
        f"the key does not open {path}: it is encrypted under another key, or is not a database"
    )


def open_keyed(target: str, key: bytes, *, path: str | None = None, **options: Any) -> Any:
    """A SQLCipher connection to ``target`` (a path, or a ``file:`` URI with ``uri=True``) under
    ``key``, proven to read the file; ``path`` names the file in errors (default ``target``)."""
    module = cipher_module()
    where = path or target
    raw = module.connect(target, factory=_connection_class(), **options)
    try:
        raw.execute("PRAGMA cipher_log_level = NONE")  # its own stderr lines: errors are ours to say
        raw.execute(key_pragma(key))
        raw.cipher_key = key
        try:
            raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except module.DatabaseError as exc:
            if "not a database" not in str(exc):
                raise
            raise _diagnosed(where, key) from None
        raw.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        raw.execute("PRAGMA temp_store = MEMORY")  # no temporary file, encrypted or not
    except BaseException:
        raw.close()
        raise
    return raw
