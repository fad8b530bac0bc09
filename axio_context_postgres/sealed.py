"""Client-side encryption on PostgreSQL, in one place: the pool's connections.

Every statement of this backend, a plan's or a native one, runs on a :class:`SealingConnection`.
A statement marks what a user wrote with :func:`sealed` (or the dialect's ``sealed``/``json_arg``),
and search text with :func:`index_text`. With a key, the connection seals the marked arguments
(AES-256-GCM, :class:`axio_context.sealing.PayloadCipher`), sends empty search text (so no
``tsvector`` ever holds a user's words), and opens every sealed value in the rows it reads back:
no layer reads or writes ciphertext itself. Without a key it passes the values as they are.

A database is marked encrypted by a row in ``axio_settings`` holding the key's check value;
:func:`check_key` compares it on open and names what is wrong in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import asyncpg

from axio_context.encryption import KeyRequiredError, NotEncryptedError, WrongKeyError
from axio_context.sealing import JSON_MARK, TEXT_MARK, PayloadCipher, SealMarkError

__all__ = [
    "CHECK_SETTING",
    "Index",
    "Sealed",
    "SealingConnection",
    "check_key",
    "cipher_of",
    "encrypted",
    "index_text",
    "open_on_read",
    "sealed",
]

#: The ``axio_settings`` key whose value is the key's check value (present: the data is sealed).
CHECK_SETTING: Final = "encryption_key_check"


class Sealed:
    """An argument a user wrote: sealed under the key, if any (a list: each item; ``json``: the
    argument is JSON text for a ``jsonb`` parameter)."""

    __slots__ = ("json", "value")

    def __init__(self, value: Any, json: bool = False) -> None:
        self.value = value
        self.json = json


class Index:
    """Search text of a user's words (a list: each item): sent as it is, or empty under a key."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def sealed(value: Any, json: bool = False) -> Sealed:
    """Mark ``value`` (bytes, text, JSON text, or a list of them) as what a user wrote."""
    return Sealed(value, json)


def index_text(value: Any) -> Index:
    """Mark ``value`` (text, or a list of texts) as search text of a user's words."""
    return Index(value)


def _seal_one(cipher: PayloadCipher, value: Any, json: bool) -> Any:
    if value is None:
        return None
    if json:
        return cipher.seal_json(value)
    if isinstance(value, str):
        return cipher.seal_text(value)
    return cipher.seal_bytes(value)


#: The classes these checks test on every argument of every statement, as tuples made once (an
#: ``A | B`` written in the call would build a union object each time, and tests slower).
_MARKED: Final = (Sealed, Index)
_LISTS: Final = (list, tuple)


def _sealed_arg(cipher: PayloadCipher | None, arg: Any) -> Any:
    if isinstance(arg, Sealed):
        if cipher is None:
            return arg.value
        if isinstance(arg.value, _LISTS):
            return [_seal_one(cipher, v, arg.json) for v in arg.value]
        return _seal_one(cipher, arg.value, arg.json)
    if isinstance(arg, Index):
        if cipher is None:
            return arg.value
        return ["" for _ in arg.value] if isinstance(arg.value, _LISTS) else ""
    return arg


_MARKS: Final = (TEXT_MARK, JSON_MARK)


def _refuse_one(value: Any) -> None:
    if isinstance(value, str) and value.startswith(_MARKS):
        mark = TEXT_MARK if value.startswith(TEXT_MARK) else JSON_MARK
        raise SealMarkError(
            f"{value[:40]!r} begins with {mark!r}, which marks a sealed value on an encrypted"
            " database: choose another id, key or label"
        )


def _refuse_marked(arg: Any) -> None:
    """Under a key, a value stored as it is must not begin as a sealed one does: every cell read
    is opened by its mark, so it would fail to open on every read after (a session id such as
    ``axsealed1:x`` would break the listing for good)."""
    if not isinstance(arg, _LISTS):
        _refuse_one(arg)
        return
    try:  # a list of texts (a batch's roles, ids): both marks hold TEXT_MARK, so one C search
        if TEXT_MARK not in "\n".join(arg):  # of them all clears it (else: item by item)
            return
    except TypeError:  # not all texts: a list of numbers (times, tokens) holds none at all
        if not any(issubclass(kind, str) for kind in set(map(type, arg))):
            return
    for value in arg:
        _refuse_one(value)


def _args(cipher: PayloadCipher | None, args: Sequence[Any]) -> Sequence[Any]:
    marked = False
    for a in args:
        if isinstance(a, _MARKED):
            marked = True
        elif cipher is not None:
            _refuse_marked(a)
    return [_sealed_arg(cipher, x) for x in args] if marked else args


async def open_on_read(conn: Any, cipher: PayloadCipher) -> None:
    """Make ``conn`` open every sealed value it reads, inside the driver's decoding of each
    ``bytea``, ``text`` and ``jsonb`` cell (rows stay the driver's own records; a value that is
    not sealed comes back as it is)."""
    open_bytes, open_text = cipher.openers()
    await conn.set_type_codec(
        "bytea", schema="pg_catalog", encoder=bytes, decoder=open_bytes, format="binary"
    )
    await conn.set_type_codec("text", schema="pg_catalog", encoder=str, decoder=open_text, format="text")
    await conn.set_type_codec("jsonb", schema="pg_catalog", encoder=str, decoder=open_text, format="text")


class SealingConnection(asyncpg.Connection):  # type: ignore[misc]
    """asyncpg's connection, sealing the marked arguments under the key the pool gave it (none:
    they pass as they are); what it reads is opened by its codecs (:func:`open_on_read`)."""

    _axio_cipher: PayloadCipher | None = None

    async def execute(self, query: str, *args: Any, timeout: float | None = None) -> str:  # noqa: ASYNC109 (asyncpg's signature)
        return await super().execute(query, *_args(self._axio_cipher, args), timeout=timeout)  # type: ignore[no-any-return]

    async def executemany(self, command: str, args: Any, *, timeout: float | None = None) -> Any:  # noqa: ASYNC109 (asyncpg's signature)
        cipher = self._axio_cipher
        return await super().executemany(command, [_args(cipher, a) for a in args], timeout=timeout)

    async def fetch(
        self,
        query: str,
        *args: Any,
        timeout: float | None = None,  # noqa: ASYNC109 (asyncpg's signature)
        record_class: Any = None,
    ) -> list[Any]:
        sent = _args(self._axio_cipher, args)
        return await super().fetch(query, *sent, timeout=timeout, record_class=record_class)  # type: ignore[no-any-return]

    async def fetchrow(
        self,
        query: str,
        *args: Any,
        timeout: float | None = None,  # noqa: ASYNC109 (asyncpg's signature)
        record_class: Any = None,
    ) -> Any:
        sent = _args(self._axio_cipher, args)
        return await super().fetchrow(query, *sent, timeout=timeout, record_class=record_class)

    async def fetchval(self, query: str, *args: Any, column: int = 0, timeout: float | None = None) -> Any:  # noqa: ASYNC109 (asyncpg's signature)
        sent = _args(self._axio_cipher, args)
        return await super().fetchval(query, *sent, column=column, timeout=timeout)


def cipher_of(conn: Any) -> PayloadCipher | None:
    """The cipher a connection (or a pool's proxy of one) seals with; None: not encrypted."""
    inner = getattr(conn, "_con", conn)  # a pool's PoolConnectionProxy
    return getattr(inner, "_axio_cipher", None)


async def encrypted(conn: Any) -> bool:
    """Whether ``conn`` seals (a plan asks with ``Native(encrypted)``: a condition on a sealed
    column cannot run on the server, so the plan reads the rows and checks them itself)."""
    return cipher_of(conn) is not None


async def _has_user_rows(conn: Any) -> bool:
    tables = await conn.fetch(
        "SELECT quote_ident(table_name) FROM information_schema.tables"
        " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        " AND table_name NOT IN ('axio_settings', 'axio_schema')"
    )
    for (name,) in tables:
        if await conn.fetchval(f"SELECT EXISTS (SELECT 1 FROM {name})"):
            return True
    return False


async def check_key(conn: Any, cipher: PayloadCipher | None, where: str) -> None:
    """Hold the database's mark against the key given (one line each: encrypted and no key,
    another key, a plain database with a key); an empty database opened with a key is marked
    encrypted under it."""
    stored = await conn.fetchval("SELECT value FROM axio_settings WHERE key = $1", CHECK_SETTING)
    if stored is None:
        if cipher is None:
            return
        async with conn.transaction():
            await conn.execute("LOCK TABLE axio_settings IN EXCLUSIVE MODE")
            stored = await conn.fetchval("SELECT value FROM axio_settings WHERE key = $1", CHECK_SETTING)
            if stored is None:
                if await _has_user_rows(conn):
                    raise NotEncryptedError(
                        f"{where} is not encrypted but a key was given"
                        " (`axio-context encrypt` encrypts it; or open it without a key)"
                    )
                await conn.execute(
                    "INSERT INTO axio_settings (key, value) VALUES ($1, $2)",
                    CHECK_SETTING,
                    cipher.check_value,
                )
                return
    if cipher is None:
        raise KeyRequiredError(
            f"{where} is encrypted: give its key (--key-file, or $AXIO_CONTEXT_KEY / $AXIO_CONTEXT_KEY_FILE)"
        )
    if stored != cipher.check_value:
        raise WrongKeyError(f"the key does not open {where}: it is encrypted under another key")
