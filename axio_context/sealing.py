"""Sealing single values with AES-256-GCM, for a backend that encrypts on the client (PostgreSQL:
see docs/encryption.md). The server then holds only a *sealed* value in place of what a user wrote.

A sealed value says what it is by its first bytes, so it goes in the column the plain value went
in and the schema need not change:

- bytes (a ``bytea`` payload): :data:`BYTES_MARK`, then a 12-byte random nonce, then the ciphertext
  and its 16-byte tag;
- text (a ``text`` column): :data:`TEXT_MARK`, then the base64 of nonce and ciphertext;
- JSON (a ``jsonb`` column): a JSON string holding the text form of the JSON text's seal.

The associated data names the kind (bytes, text or JSON), so a value cannot be opened as another
kind. Two subkeys are derived from the key with HMAC-SHA256: one seals, one makes the *check
value* a database records to tell a wrong key from the right one without storing the key.
``cryptography`` (the ``encryption`` extra) is imported only when a cipher is made.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import os
from collections.abc import Callable
from typing import Any, Final

from .encryption import KEY_BYTES, EncryptionUnavailableError, parse_key
from .errors import AxioContextError

__all__ = [
    "BYTES_MARK",
    "JSON_MARK",
    "TEXT_MARK",
    "PayloadCipher",
    "SealMarkError",
    "UnsealError",
]

#: How a sealed ``bytea`` value starts.
BYTES_MARK: Final = b"\x00\xffaxs1\xff\x00"
#: How a sealed ``text`` value starts.
TEXT_MARK: Final = "axsealed1:"
#: How a sealed ``jsonb`` value's text starts (a JSON string).
JSON_MARK: Final = '"' + TEXT_MARK

_NONCE: Final = 12
_BYTES_AT: Final = len(BYTES_MARK)
_DATA_AT: Final = _BYTES_AT + 12
_TEXT_AT: Final = len(TEXT_MARK)
_JSON_AT: Final = len(JSON_MARK)
_AAD_BYTES: Final = b"axio-context sealed bytes 1"
_AAD_TEXT: Final = b"axio-context sealed text 1"
_AAD_JSON: Final = b"axio-context sealed json 1"


_UNSEALABLE: Final = (
    "a stored value does not decrypt under the key: it was altered, or sealed under another key"
)


class UnsealError(AxioContextError):
    """A stored value does not open under the key: altered, or sealed under another key."""


class SealMarkError(AxioContextError, ValueError):
    """A value to store as it is (an id, a key, a label) begins as a sealed value does: under a
    key it would be read back as one, and fail to open."""


_b64: Final = binascii.b2a_base64


def _subkey(key: bytes, purpose: bytes) -> bytes:
    return hmac.new(key, b"axio-context " + purpose, hashlib.sha256).digest()


class PayloadCipher:
    """Seals and opens values under one 32-byte key (see the module docstring)."""

    __slots__ = ("_aead", "_invalid", "_opened", "check_value")

    def __init__(self, key: bytes | str) -> None:
        raw = parse_key(key)
        try:
            from cryptography.exceptions import InvalidTag
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        except ImportError:
            raise EncryptionUnavailableError(
                "a key was given but `cryptography` is not installed: pip install 'axio-context[encryption]'"
            ) from None
        assert len(raw) == KEY_BYTES
        self._aead = AESGCM(_subkey(raw, b"payload key 1"))
        self._invalid: type[Exception] = InvalidTag
        #: Hex text a database records to tell this key from another (reveals nothing of it).
        self.check_value: str = _subkey(raw, b"key check 1").hex()
        self._opened = self._make_openers()

    def _seal(self, data: bytes, aad: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, data, aad)

    def seal_bytes(self, data: bytes) -> bytes:
        """``data`` sealed (starts with :data:`BYTES_MARK`)."""
        return BYTES_MARK + self._seal(bytes(data), _AAD_BYTES)

    def seal_text(self, text: str) -> str:
        """``text`` sealed (starts with :data:`TEXT_MARK`)."""
        return TEXT_MARK + _b64(self._seal(text.encode(), _AAD_TEXT), newline=False).decode("ascii")

    def seal_json(self, text: str) -> str:
        """The JSON text ``text`` sealed, as the JSON text of a string (starts with :data:`JSON_MARK`)."""
        return JSON_MARK + _b64(self._seal(text.encode(), _AAD_JSON), newline=False).decode("ascii") + '"'

    def openers(self) -> tuple[Callable[[bytes], bytes], Callable[[str], str]]:
        """The decoders of a ``bytea`` cell and of a ``text`` or ``jsonb`` cell (its text): each
        opens a sealed value and returns any other as it is (the same object). They run on every
        cell a read returns, so each holds what it calls in its closure (no attribute or global
        lookups) and checks its marks first: a plain cell costs two comparisons. Made once per
        cipher; every connection's codecs share them."""
        return self._opened

    def _make_openers(self) -> tuple[Callable[[bytes], bytes], Callable[[str], str]]:
        decrypt = self._aead.decrypt
        failed = (self._invalid, ValueError)
        bytes_mark, text_mark, json_mark = BYTES_MARK, TEXT_MARK, JSON_MARK
        aad_bytes, aad_text, aad_json = _AAD_BYTES, _AAD_TEXT, _AAD_JSON
        unb64 = binascii.a2b_base64
        unsealable = _UNSEALABLE
        nonce_at, data_at, nonce = _BYTES_AT, _DATA_AT, _NONCE
        text_at, json_at = _TEXT_AT, _JSON_AT

        def open_bytes(value: bytes) -> bytes:
            if value[:nonce_at] != bytes_mark:
                return value
            try:  # bytes slices: cryptography takes them faster than memoryviews
                return decrypt(value[nonce_at:data_at], value[data_at:], aad_bytes)
            except failed:
                raise UnsealError(unsealable) from None

        def open_text(value: str) -> str:
            if value.startswith(text_mark):
                aad, start, end = aad_text, text_at, None
            elif value.startswith(json_mark):  # a jsonb cell, or its ::text
                aad, start, end = aad_json, json_at, -1
            else:
                return value
            try:
                blob = unb64(value[start:end])
                return decrypt(blob[:nonce], blob[nonce:], aad).decode()
            except failed:  # (binascii.Error and UnicodeDecodeError are ValueErrors)
                raise UnsealError(unsealable) from None

        return open_bytes, open_text

    def open(self, value: Any) -> Any:
        """A value read back: a sealed one opened (to the bytes, text or JSON text sealed),
        anything else as it is (the same object)."""
        open_bytes, open_text = self._opened
        if isinstance(value, bytes):
            return open_bytes(value)
        return open_text(value) if isinstance(value, str) else value
