"""Commands that search: search, similar, reindex, index."""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import click

from axio_context.embeddings import BUNDLED_MINILM
from axio_context.onnx_minilm import ONNX_MINILM
from axio_context.search.calls import why_no_blocks
from axio_context.search.embedders import HASHING_MODEL

from ..search.engine import MAX_K, MODES, IndexStatus, ReindexReport, SearchResults
from .agent_filters import agent_options, tag_filters
from .app import cli, read_db, settings_of, with_db
from .backends import OpenDatabase
from .options import (
    Count,
    When,
    chosen_project,
    complete_sessions,
    one_format,
    output_options,
    project_option,
    session_argument,
    stored_project,
)
from .output import StageProgress, echo_json, say, shown_ids, visible
from .search_hits import emit_results


class QueryCommand(click.Command):
    """A command whose QUERY words may start with ``-`` (``search parser -zebra``): such a word is
    an option when it is one of the command's options as written (``-k 5``, ``--mode=keyword``)
    or a short option that takes a value with the value attached (``-k5``, ``-pmyproj``, as in
    click and every Unix tool); any other is a query word. After ``--`` every word is."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value: dict[str, bool] = {}
        for param in self.get_params(ctx):
            if isinstance(param, click.Option):
                for name in (*param.opts, *param.secondary_opts):
                    takes_value[name] = not param.is_flag and not param.count
        options: list[str] = []
        words: list[str] = []
        rest = iter(args)
        for arg in rest:
            if arg == "--":
                words.extend(rest)
                break
            name = arg.split("=", 1)[0] if arg.startswith("--") else arg
            if name in takes_value:
                options.append(arg)
                if takes_value[name] and "=" not in arg:
                    value = next(rest, None)
                    if value is None:  # click's own error (the "--" added below is no value)
                        if ctx.resilient_parsing:  # shell completion: it completes the value
                            return super().parse_args(ctx, [*options, *words])
                        raise click.BadOptionUsage(name, f"Option {name!r} requires an argument.")
                    options.append(value)  # taken as it is, even when it starts with -
                continue
            # An unknown --option is left to click, which names it; -k5 is -k 5, -pX is -p X.
            option = arg.startswith("--") or (len(arg) > 2 and takes_value.get(arg[:2], False))
            (options if option else words).append(arg)
        return super().parse_args(ctx, [*options, "--", *words] if words else options)


@cli.command("search", cls=QueryCommand)
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="hybrid",
    show_default=True,
    help="keyword: the words (FTS5); semantic: nearest embeddings; hybrid: both, fused.",
)
@click.option(
    "-k", "--limit", type=click.IntRange(1, MAX_K), default=10, show_default=True, help="At most N hits."
)
@project_option
@click.option(
    "-s",
    "--session",
    shell_complete=complete_sessions,
    help="Only this session's transcript (id or unique prefix), inherited messages included.",
)
@click.option(
    "--role", type=click.Choice(["user", "assistant", "system"]), help="Only messages of this role."
)
@click.option("--since", type=When(), help="Only messages since (a date, or an age like 7d).")
@click.option("--raw", is_flag=True, help='QUERY is FTS5 syntax: AND, OR, NOT, NEAR, "phrases", prefix*.')
@click.option(
    "--model",
    help="Embedder for semantic/hybrid: hashing, minilm, minilm-onnx, or a model directory "
    "(default: the one the database was embedded with).",
)
@click.option(
    "--blocks/--no-blocks",
    "blocks",
    default=None,
    help="Also search memory blocks (their current values, by their words), listed after the "
    "messages [default: yes, except in semantic mode, with --raw, or with a --project, --session, "
    "--role or --run filter].",
)
@agent_options("messages")
@output_options(results=True)
@click.pass_context
def search_(
    ctx: click.Context,
    query: tuple[str, ...],
    mode: str,
    limit: int,
    project: str | None,
    here: bool,
    session: str | None,
    role: str | None,
    since: datetime | None,
    raw: bool,
    model: str | None,
    agent_id: str | None,
    run_id: str | None,
    blocks: bool | None,
    as_json: bool,
    nl: bool,
) -> None:
    """Search every session's messages, and the memory blocks, for QUERY (words; quotes keep a
    phrase).

    Memory blocks are found by their words (every word anywhere in a block's current value,
    label or description, in any case) in keyword and hybrid modes, and listed after the
    messages; with --agent, only the blocks that agent sees.

    A word starting with - is part of QUERY unless it is one of the options below, written
    apart or, for -k, -p and -s, with the value attached (-k5, -pmyproj, -sab12): so
    `search parser -zebra` searches both words, but `search parser -pizza` is
    `search parser -p izza`. After -- every word is QUERY: `search -- parser -pizza`. Without
    --raw, -zebra is the word zebra, not an exclusion: --raw 'parser NOT zebra' leaves a word out.
    """
    one_format(as_json, nl)
    scope = chosen_project(project, here)
    text = " ".join(query)
    _check_model(model)
    if blocks:
        why = why_no_blocks(cast(Any, mode), raw, scope, session, role, run_id)
        if why is not None:
            raise click.BadParameter(why, param_hint="'--blocks'")

    async def go(db: OpenDatabase) -> tuple[SearchResults, dict[str, str]]:
        session_id = await db.resolve(session) if session is not None else None
        hits = await db.search(
            text,
            k=limit,
            mode=cast(Any, mode),
            project=await stored_project(db, scope),
            session_id=session_id,
            role=role,
            since=since,
            raw=raw,
            model=model,
            blocks=blocks,
            **tag_filters(db, agent_id, run_id),
        )
        shown = {} if as_json or nl else await shown_ids(db, [h.session_id for h in hits])
        return hits, shown

    found = with_db(ctx, False, go, absent=lambda: None)
    if found is None:  # a fresh machine: no database yet
        nothing = visible(f"no sessions yet (database: {settings_of(ctx).shown})")
        emit_results(SearchResults(), {}, as_json, nl, nothing)
        return
    hits, shown = found
    dashed = [w for w in text.split() if len(w) > 1 and w.startswith("-")]
    if dashed and not raw:
        click.echo(
            f"note: {dashed[0]} searches for the word itself; --raw 'parser NOT pizza' leaves a word out",
            err=True,
        )
    emit_results(hits, shown, as_json, nl, "no matches")


# A negative POSITION ("-1") is an argument, not an unknown option.
@cli.command(context_settings={"ignore_unknown_options": True})
@session_argument()
@click.argument("position", type=int)
@click.option(
    "-k", "--limit", type=click.IntRange(1, MAX_K), default=10, show_default=True, help="At most N hits."
)
@output_options(results=True)
@click.pass_context
def similar(ctx: click.Context, session: str, position: int, limit: int, as_json: bool, nl: bool) -> None:
    """Messages across every session nearest in meaning to message POSITION of SESSION.

    POSITION counts from 0 in the session's full transcript; a negative one counts from its end
    (-1: the last message). The message's stored embedding is the query, so no model runs.
    """
    one_format(as_json, nl)

    async def go(db: OpenDatabase) -> tuple[SearchResults, dict[str, str]]:
        hits = await db.similar(await db.resolve(session), position, limit)
        return hits, {} if as_json or nl else await shown_ids(db, [h.session_id for h in hits])

    hits, shown = read_db(ctx, go)
    emit_results(hits, shown, as_json, nl, "no other embedded message")


#: The short model names ``--model`` takes.
_KNOWN_MODELS = ("hashing", "minilm", "minilm-onnx")


def _check_model(model: str | None) -> None:
    """Refuse a ``--model`` that names nothing this installation can load (a usage error naming
    it and the known ones), instead of the load failing for an unrelated reason."""
    if model is None or model in (
        "hashing",
        HASHING_MODEL,
        "minilm",
        BUNDLED_MINILM,
        "minilm-onnx",
        ONNX_MINILM,
    ):
        return
    if Path(model).expanduser().is_dir() or importlib.util.find_spec("sentence_transformers"):
        return  # a model directory, or a name sentence-transformers may have in its cache
    raise click.BadParameter(
        f"unknown model {model!r}: use {', '.join(_KNOWN_MODELS)}, or a sentence-transformers "
        "model directory",
        param_hint="'--model'",
    )


@cli.command()
@click.option(
    "--model",
    help="hashing, minilm, minilm-onnx, or a model directory (default: the database's model, else hashing).",
)
@click.option(
    "--dimension",
    type=click.IntRange(8, 8192),
    help="Width of the hashing embedder (default: the database's, else 384).",
)
@click.option("--rebuild", is_flag=True, help="Drop every embedding first and re-embed with --model.")
@click.option("--batch-size", type=Count(1), default=256, show_default=True)
@output_options(listing=False)
@click.pass_context
def reindex(
    ctx: click.Context,
    model: str | None,
    dimension: int | None,
    rebuild: bool,
    batch_size: int,
    as_json: bool,
) -> None:
    """Embed the messages stored without an embedding (resumable), and repair stale codes."""
    progress = StageProgress()

    _check_model(model)

    async def go(db: OpenDatabase) -> ReindexReport:
        if dimension is not None:
            recorded = await db.embedding_model()
            name = model or (recorded[0] if recorded else "hashing")
            if name not in ("hashing", HASHING_MODEL):
                raise click.BadParameter(
                    f"only the hashing embedder has a width to choose; {name!r} has its own",
                    param_hint="'--dimension'",
                )
        embedder = await db.embedder(model, dimension=dimension)
        return await db.reindex(
            embedder, batch_size=batch_size, progress=progress, rebuild=rebuild, on_estimate=estimate
        )

    def estimate(messages: int, size: int) -> None:
        if messages:
            click.echo(
                f"embedding up to {messages:,} message(s): the database grows by about {_mb(size)}",
                err=True,
            )

    try:
        r = with_db(ctx, False, go)
    finally:
        progress.close()
    if as_json:
        echo_json(r)
        return
    what = "re-embedded" if r.rebuilt else "embedded"
    say(f"{what} {r.embedded:,} message(s) with {r.model} ({r.dimension} dimensions)")
    if r.without_text:
        click.echo(f"{r.without_text:,} message(s) have no text to embed")
    if r.codes_added or r.codes_removed:
        click.echo(f"binary codes: {r.codes_added:,} added, {r.codes_removed:,} removed")
    if r.codes_stale:
        click.echo(
            "sqlite-vec does not run here, so semantic search uses the exact scan until reindex "
            "runs where it loads",
            err=True,
        )


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size / 1e3:,.0f} KB"


def _status_lines(s: IndexStatus) -> list[str]:
    model = (
        "(none yet: `axio-context reindex`)" if s.model is None else f"{s.model} ({s.dimension} dimensions)"
    )
    missing = s.messages - s.embedded
    note = f" ({missing:,} without: no text, or stored without an embedder)" if missing else ""
    semantic = {
        "vec0": "vec0 binary codes, re-scored exactly",
        "exact": "exact scan of every embedding (slower)",
        "none": "unavailable until messages are embedded",
    }[s.semantic]
    return [
        f"model        {model}",
        f"embedded     {s.embedded:,} of {s.messages:,} stored message(s){note}",
        f"sqlite-vec   {'loaded' if s.vec_available else 'unavailable on this platform'}",
        f"codes        {'stale: `axio-context reindex` repairs them' if s.codes_stale else 'up to date'}",
        f"semantic     {semantic}",
        "keyword      FTS5: every committed message (the newest are folded in before a search)",
    ]


@cli.command("index")
@output_options(listing=False)
@click.pass_context
def index_(ctx: click.Context, as_json: bool) -> None:
    """Show the search indexes: embedding model, coverage, sqlite-vec (pgvector on PostgreSQL)."""
    s = read_db(ctx, lambda db: db.index_status())
    if as_json:
        echo_json(s)
        return
    lines = getattr(s, "lines", None)  # a PostgreSQL database's status words itself
    say("\n".join(lines() if callable(lines) else _status_lines(cast(IndexStatus, s))))
