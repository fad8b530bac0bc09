"""Keys for encryption at rest: what a key is, where one comes from, and the errors a wrong one gives.

A key is 32 random bytes (AES-256), written as 64 hexadecimal characters (``AXIO_CONTEXT_KEY``,
or the text of a key file) or given as the bytes themselves (a key file may also hold exactly 32
raw bytes). It is never stored in the database, never printed, and never derived from a
passphrase here: make one with ``python -c "import secrets; print(secrets.token_hex(32))"``.
A backend takes the key when it opens a location (:func:`axio_context.backends.open_database`);
``key=None`` there means the one from the environment (:func:`key_from_environment`), if any.
"""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Final

from .errors import AxioContextError, DatabaseError, DatabaseOpenError

__all__ = [
    "ENV_KEY",
    "ENV_KEY_FILE",
    "KEY_BYTES",
    "AlreadyEncryptedError",
    "EncryptionKeyError",
    "EncryptionUnavailableError",
    "KeyRequiredError",
    "NotEncryptedError",
    "WrongKeyError",
    "key_from_environment",
    "parse_key",
    "read_key_file",
]

#: The environment variable holding a key as 64 hexadecimal characters.
ENV_KEY: Final = "AXIO_CONTEXT_KEY"
#: The environment variable naming a key file (used when :data:`ENV_KEY` is not set).
ENV_KEY_FILE: Final = "AXIO_CONTEXT_KEY_FILE"
#: A key's length in bytes.
KEY_BYTES: Final = 32

_HEX = frozenset(string.hexdigits)


class EncryptionKeyError(AxioContextError, ValueError):
    """A key that is not a key: the wrong length, or not hexadecimal (its text is never shown)."""


class EncryptionUnavailableError(DatabaseOpenError):
    """A key was given but the encryption driver (the ``encryption`` extra) is not installed."""


class KeyRequiredError(DatabaseOpenError):
    """The database is encrypted and no key was given."""


class WrongKeyError(DatabaseOpenError):
    """The key given does not open the database: it was encrypted under another key."""


class NotEncryptedError(DatabaseOpenError):
    """A key was given for a database that is not encrypted."""


class AlreadyEncryptedError(DatabaseError):
    """``encrypt`` of a database that is encrypted already (``rekey`` changes its key)."""


def parse_key(key: bytes | str, source: str = "the key") -> bytes:
    """The 32 bytes of ``key`` (bytes as they are, text as 64 hex characters); ``source`` names
    where it came from in the error, which never quotes the key itself."""
    if isinstance(key, bytes | bytearray | memoryview):
        raw = bytes(key)
        if len(raw) != KEY_BYTES:
            raise EncryptionKeyError(f"{source} must be {KEY_BYTES} bytes, not {len(raw)}")
        return raw
    if not isinstance(key, str):
        raise EncryptionKeyError(f"{source} must be bytes or hexadecimal text, not {type(key).__name__}")
    text = key.strip()
    if not text or not set(text) <= _HEX:
        raise EncryptionKeyError(
            f"{source} must be {KEY_BYTES * 2} hexadecimal characters (a {KEY_BYTES}-byte key)"
        )
    if len(text) != KEY_BYTES * 2:
        raise EncryptionKeyError(
            f"{source} must be {KEY_BYTES * 2} hexadecimal characters ({KEY_BYTES} bytes), not {len(text)}"
        )
    return bytes.fromhex(text)


def read_key_file(path: str | os.PathLike[str]) -> bytes:
    """The key in the file at ``path``: 64 hex characters (surrounding white space ignored), or
    exactly 32 raw bytes."""
    where = Path(path).expanduser()
    try:
        data = where.read_bytes()
    except OSError as exc:
        raise EncryptionKeyError(f"cannot read the key file {where}: {exc.strerror or exc}") from None
    if len(data) == KEY_BYTES:
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            return data
        if not set(text.strip()) <= _HEX or len(text.strip()) != KEY_BYTES * 2:
            return data
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise EncryptionKeyError(
            f"the key file {where} must hold {KEY_BYTES * 2} hexadecimal characters or {KEY_BYTES} bytes,"
            f" not {len(data)} bytes"
        ) from None
    return parse_key(text, f"the key in {where}")


def key_from_environment() -> bytes | None:
    """The key ``$AXIO_CONTEXT_KEY`` holds, else the one in the file ``$AXIO_CONTEXT_KEY_FILE``
    names, else None."""
    text = os.environ.get(ENV_KEY)
    if text:
        return parse_key(text, f"${ENV_KEY}")
    named = os.environ.get(ENV_KEY_FILE)
    if named:
        return read_key_file(named)
    return None
