"""How ``search`` and ``similar`` print what they found: the message hits, then the memory block
hits (``search`` only), as tables for people (stored text through
:func:`~axio_context.terminal.visible`, matches in bold on a terminal) or JSON for programs."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click
import msgspec

from axio_context.search.results import BlockHit, SearchHit, SearchResults

from .output import Column, echo_json, emit, local_time, say, visible

__all__ = ["BLOCK_COLUMNS", "SEARCH_COLUMNS", "emit_results"]


def _color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _snippet_cell(hit: SearchHit | BlockHit, width: int, color: bool) -> str:
    """The snippet cut to ``width`` characters, matches in bold (on a terminal) or ``**``."""
    text, spans = hit.snippet, hit.highlights
    if len(text) > width:
        text = text[: width - 1] + "…"
        spans = [(a, min(b, width - 1)) for a, b in spans if a < width - 1]
    out: list[str] = []
    last = 0
    for a, b in spans:
        word = visible(text[a:b])
        out.append(visible(text[last:a]))
        out.append(click.style(word, bold=True, fg="yellow") if color else f"**{word}**")
        last = b
    out.append(visible(text[last:]))
    return "".join(out).replace("\n", " ").replace("\t", " ")


def _hit_dict(hit: SearchHit) -> dict[str, Any]:
    return {f: getattr(hit, f) for f in SearchHit.__struct_fields__}


SEARCH_COLUMNS = [
    Column("session", "SESSION"),
    Column("position", "POS", right=True),
    Column("role", "ROLE"),
    Column("when", "WHEN"),
    Column("snippet", "SNIPPET", visible=True),
]


BLOCK_COLUMNS = [
    Column("label", "BLOCK"),
    Column("agent", "AGENT"),
    Column("version", "VER", right=True),
    Column("when", "WHEN"),
    Column("snippet", "SNIPPET", visible=True),
]


def _snippet_width(used: int) -> int:
    return max(40, shutil.get_terminal_size((120, 24)).columns - used) if sys.stdout.isatty() else 100


def _block_rows(hits: Sequence[BlockHit]) -> list[dict[str, Any]]:
    color = _color()
    width = _snippet_width(max([len(h.label) for h in hits] or [5]) + 12 + 5 + 16 + 4 * 2)
    return [
        {
            "label": h.label,
            "agent": h.agent_id or "(shared)",
            "version": str(h.version),
            "when": local_time(h.updated_at),
            "snippet": _snippet_cell(h, width, color),
        }
        for h in hits
    ]


def _hit_rows(hits: Sequence[SearchHit], shown: dict[str, str]) -> list[dict[str, Any]]:
    color = _color()
    width = _snippet_width(max([len(v) for v in shown.values()] or [7]) + 6 + 10 + 16 + 4 * 2)
    return [
        {
            "session": shown[h.session_id],
            "position": str(h.position),
            "role": h.role,
            "when": local_time(h.created_at),
            "snippet": _snippet_cell(h, width, color),
        }
        for h in hits
    ]


def emit_results(results: SearchResults, shown: dict[str, str], as_json: bool, nl: bool, empty: str) -> None:
    """Notes to stderr; ``--json``: the results with their notes as one object; else the hits."""
    for note in results.notes():
        say(f"note: {note}", err=True)
    if as_json:
        echo_json({**msgspec.to_builtins(results), "notes": results.notes()})
        return
    if not results and not results.blocks and not nl:
        click.echo(empty, err=True)
        return
    if results or nl:
        rows = [_hit_dict(h) for h in results]
        emit(rows, SEARCH_COLUMNS, False, nl, lambda: _hit_rows(results.hits, shown))
    if results.blocks:
        if results and not nl:
            click.echo()
        block_rows = [msgspec.to_builtins(h) for h in results.blocks]
        emit(block_rows, BLOCK_COLUMNS, False, nl, lambda: _block_rows(results.blocks))
