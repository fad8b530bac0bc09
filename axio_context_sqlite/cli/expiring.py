"""``prune --expired``: delete what has outlived its TTL (see :mod:`axio_context.expiry`), with
prune's conventions: a count first, --dry-run to stop there, a confirmation unless --yes."""

from __future__ import annotations

import click
import msgspec

from axio_context.memory.expiring import ExpiredCounts

from .app import with_db
from .backends import OpenDatabase
from .output import echo_json

__all__ = ["prune_expired"]


async def _count(db: OpenDatabase) -> ExpiredCounts:
    return await db.memory_stores().expiry().count_expired()


async def _sweep(db: OpenDatabase) -> ExpiredCounts:
    return await db.memory_stores().expiry().sweep_expired()


def _emit(counts: ExpiredCounts, as_json: bool, nl: bool) -> None:
    echo_json(msgspec.to_builtins(counts), indent=2 if as_json else 0)


def prune_expired(ctx: click.Context, dry_run: bool, yes: bool, as_json: bool, nl: bool) -> None:
    """Count the expired items, then (unless --dry-run, and once confirmed) delete them; the
    sweep deletes what is expired when it runs, so an item that expired meanwhile goes too."""
    due = with_db(ctx, False, _count)
    if dry_run or not due.total:
        if as_json or nl:
            _emit(due, as_json, nl)
        else:
            what = f"{due.total:,} expired item(s) would be deleted ({due.parts()})" if dry_run else ""
            click.echo(what or "nothing expired", err=True)
        return
    if not yes and not click.confirm(f"Delete {due.total:,} expired item(s) ({due.parts()})?", err=True):
        click.echo("nothing deleted", err=True)  # a refusal is an answer, not an error
        return
    gone = with_db(ctx, False, _sweep)
    if as_json or nl:
        _emit(gone, as_json, nl)
    else:
        click.echo(f"deleted {gone.total:,} expired item(s) ({gone.parts()})")
