"""``encrypt``, ``decrypt`` and ``rekey``: convert a database through its backend's ``convert_keys``:
a file in place, atomically (a new file written beside it, synced, renamed over it:
:mod:`..admin.encryption`), or a server's database in one transaction (PostgreSQL seals payloads
on the client). Keys come from files or the environment, never from the command line, and are
never printed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import click

from axio_context.backends import backend_for
from axio_context.encryption import ENV_KEY, ENV_KEY_FILE, key_from_environment, read_key_file

from .app import Settings, cli, one_line_errors, settings_of
from .options import output_options
from .output import echo_json, say


def _run(settings: Settings, old: bytes | None, new: bytes | None) -> None:
    """Convert the database through its backend's ``convert_keys`` (one that has none: one line)."""
    backend = backend_for(settings.target)
    convert = getattr(backend, "convert_keys", None)
    if convert is None:
        raise click.UsageError(f"the {backend.name} backend does not encrypt databases")
    asyncio.run(convert(settings.target, old, new))


def _key(settings: Settings, what: str) -> bytes:
    """The key ``--key-file`` or the environment gives; a usage error naming both when none does."""
    with one_line_errors():
        key = settings.key if settings.key is not None else key_from_environment()
    if key is None:
        raise click.UsageError(f"{what} needs a key: --key-file FILE, or ${ENV_KEY} (or ${ENV_KEY_FILE})")
    return key


#: The (old, new) keys of a conversion, made from the current key.
Keys = Callable[[bytes], tuple[bytes | None, bytes | None]]


def _convert(ctx: click.Context, what: str, verb: str, as_json: bool, keys: Keys) -> None:
    """Convert the file in place from and to the keys ``keys`` makes of the current key (read
    inside the one-line errors, so a bad new key file is one line too), then say ``verb``."""
    settings = settings_of(ctx)
    key = _key(settings, what)
    with one_line_errors():
        _run(settings, *keys(key))
    if as_json:
        echo_json({"database": settings.shown, "done": verb})
    else:
        say(f"{verb} {settings.shown}")


@cli.command()
@output_options(listing=False)
@click.pass_context
def encrypt(ctx: click.Context, as_json: bool) -> None:
    """Encrypt the database file in place under the key (--key-file, or $AXIO_CONTEXT_KEY).

    A new encrypted file is written beside it, synced and renamed over it: a crash leaves the
    old file as it was. Close other programs using the database first. A PostgreSQL database
    has what users wrote sealed on the client, in one transaction."""
    _convert(ctx, "encrypt", "encrypted", as_json, lambda key: (None, key))


@cli.command()
@output_options(listing=False)
@click.pass_context
def decrypt(ctx: click.Context, as_json: bool) -> None:
    """Decrypt the database file in place (its key: --key-file, or $AXIO_CONTEXT_KEY), atomically
    as ``encrypt`` does: afterwards it is a plain SQLite file anyone who can read it can read
    (a PostgreSQL database: every payload opened, and its keyword index rebuilt)."""
    _convert(ctx, "decrypt", "decrypted", as_json, lambda key: (key, None))


@cli.command()
@click.option(
    "--new-key-file",
    type=click.Path(dir_okay=False),
    required=True,
    help="File holding the new key (64 hex characters or 32 bytes).",
)
@output_options(listing=False)
@click.pass_context
def rekey(ctx: click.Context, new_key_file: str, as_json: bool) -> None:
    """Change the key of an encrypted database file (the current one: --key-file, or
    $AXIO_CONTEXT_KEY), atomically: a crash leaves it readable under the old key or the new one."""
    _convert(ctx, "rekey", "rekeyed", as_json, lambda key: (key, read_key_file(new_key_file)))
