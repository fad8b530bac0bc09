"""Third search review: what the performance fixes keep and what they change.

Snippets past the first window are looked for only in hits known to match, within a budget;
the pruned keyword search's newest-first part walks sessions instead of sorting every match;
raw semantic queries filter a project with one join, and go through the codes when they match
many messages.
"""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from axio_context.embeddings import HashingEmbedder, Vector
from axio_context.testing import text
from axio_context_sqlite import SearchHit, SQLiteContextStore, connect
from axio_context_sqlite.database import open_database
from axio_context_sqlite.search import keyword as keyword_module
from axio_context_sqlite.search import semantic as search_module
from axio_context_sqlite.search import snippets as snippets_module
from tests.support.sqlite_checks import raw_connect


def where(hits: Sequence[SearchHit]) -> list[tuple[str, int]]:
    return [(h.session_id, h.position) for h in hits]


class Same:
    """Every text means the same: any message is a hit by meaning."""

    model = "same-v1"
    dimension = 4

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [array("f", [1.0, 0.0, 0.0, 0.0]) for _ in texts]


LATE = "filler " * 30_000 + "the needleword walrus is near the very end " + "tail " * 10


# --- 1. snippets past the first window -----------------------------------------------------------


async def test_a_hit_found_by_meaning_alone_shows_its_start_not_a_late_match(tmp_path: Path) -> None:
    path = tmp_path / "late.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=Same()).append(text("user", LATE))
    async with open_database(path) as db:
        [hit] = await db.search("walrus", mode="semantic", embedder=Same())
        # found by meaning only: its text is not tokenized past the first window
        assert hit.keyword_rank is None
        assert hit.highlights == [] and hit.snippet.startswith("filler filler")
        # a raw query's hits all match it, so the late match is shown in every mode
        for mode in ("semantic", "hybrid", "keyword"):
            [raw] = await db.search("walrus", mode=mode, raw=True, embedder=Same())
            assert "[walrus]" in raw.marked(), mode
        [both] = await db.search("walrus", mode="hybrid", embedder=Same())
        assert both.keyword_rank == 1 and "[walrus]" in both.marked()


async def test_late_snippets_stop_at_the_scan_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "budget.db"
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "s", "/p")
        await store.append_many([text("user", LATE), text("user", LATE)])
    async with open_database(path) as db:
        full = await db.search("needleword", mode="keyword")
        assert all("[needleword]" in h.marked() for h in full) and len(full) == 2
        # the first hit's late windows take the budget; the second shows its start
        monkeypatch.setattr(snippets_module, "SNIPPET_SCAN_MAX", 200_000)
        hits = await db.search("needleword", mode="keyword")
    assert where(hits) == where(full)
    assert "[needleword]" in hits[0].marked()
    assert hits[1].highlights == [] and hits[1].snippet.startswith("filler filler")


# --- 2. pruned keyword search, newest first ----------------------------------------------------


async def _interleaved(path: Path) -> None:
    """Sessions in two projects written in turns (distinct times), one renamed after its last
    message (updated later than its messages), one forked, a few assistant messages."""
    async with connect(path) as conn:
        stores = [SQLiteContextStore(conn, f"s{i}", "/a" if i % 2 else "/b") for i in range(6)]
        for turn in range(8):
            for i, store in enumerate(stores):
                if (turn + i) % 3:
                    role = "assistant" if (turn * 7 + i) % 5 == 0 else "user"
                    await store.append(text(role, f"common word turn {turn} of {i}"))
                    await asyncio.sleep(0.002)
        fork = await stores[1].fork()
        await fork.append(text("user", "common word from the fork"))
        await asyncio.sleep(0.002)
        await stores[4].append(text("user", "common word late in s4"))
        await asyncio.sleep(0.002)
        await stores[0].set_title("touched last, with no new message")


def _newest(
    path: Path, k: int, project: str | None, role: int | None, since: int | None
) -> list[tuple[str, int]]:
    """The newest ``k`` messages passing the filters, by sorting all of them."""
    conditions, args = ["1"], []
    if project is not None:
        conditions.append("s.project = ?")
        args.append(project)
    if role is not None:
        conditions.append("m.role = ?")
        args.append(role)
    if since is not None:
        conditions.append("m.created_at >= ?")
        args.append(since)
    db = raw_connect(path)
    try:
        rows = db.execute(
            "SELECT s.id, m.id & 4294967295 FROM messages m JOIN sessions s ON s.sid = m.id >> 32"
            f" WHERE {' AND '.join(conditions)} ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (*args, k),
        ).fetchall()
    finally:
        db.close()
    return [(str(s), int(p)) for s, p in rows]


@pytest.mark.parametrize("walk", [1000, 2, 0])
async def test_pruned_newest_first_walk_matches_sorting_every_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk: int
) -> None:
    path = tmp_path / "walk.db"
    await _interleaved(path)
    monkeypatch.setattr(keyword_module, "PRUNE_MIN_ROWS", 10)
    monkeypatch.setattr(keyword_module, "_RECENT_SESSIONS", walk)  # 0: sort every match at once
    db = raw_connect(path)
    try:
        middle = db.execute(
            "SELECT created_at FROM messages ORDER BY created_at LIMIT 1 OFFSET 20"
        ).fetchone()[0]
    finally:
        db.close()
    since = datetime.fromtimestamp(middle / 1000, UTC)
    since_ms = int(since.timestamp() * 1000)
    async with open_database(path) as db:
        for k in (1, 5, 17, 100):
            for project in (None, "/a"):
                for role in (None, "assistant"):
                    for after in (None, since):
                        expected = _newest(
                            path, k, project, None if role is None else 1, None if after is None else since_ms
                        )
                        hits = await db.search(
                            "common word", mode="keyword", k=k, project=project, role=role, since=after
                        )
                        assert where(hits) == expected, (k, project, role, after)
        # within one session (a fork: its inherited rows, then its own)
        scoped = await db.search("common word", mode="keyword", k=4, session_id="s1")
        assert [h.created_at for h in scoped] == sorted((h.created_at for h in scoped), reverse=True)


# --- 3. raw semantic queries ---------------------------------------------------------------------


async def _notes(path: Path) -> None:
    async with connect(path) as conn:
        for i in range(6):
            store = SQLiteContextStore(conn, f"s{i}", "/a" if i < 4 else "/b", embedder=HashingEmbedder())
            await store.append_many(
                [
                    text("user", f"parser note {j} about {'pizza' if j % 3 == 0 else 'lists'} {i}")
                    for j in range(10)
                ]
            )


def _exact(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the exact scan record its calls."""
    calls: list[str] = []
    exact = search_module.exact_scan

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append("exact")
        return exact(*args, **kwargs)

    monkeypatch.setattr(search_module, "exact_scan", recorded)
    return calls


async def test_raw_semantic_with_a_project(tmp_path: Path) -> None:
    path = tmp_path / "project.db"
    await _notes(path)
    async with open_database(path) as db:
        before = {
            mode: await db.search("parser NOT pizza", mode=mode, raw=True, embedder=HashingEmbedder(), k=50)
            for mode in ("semantic", "hybrid")
        }
        for mode in ("semantic", "hybrid"):
            hits = await db.search(
                "parser NOT pizza", mode=mode, raw=True, project="/a", embedder=HashingEmbedder()
            )
            assert hits and {h.project for h in hits} == {"/a"}
            assert all("pizza" not in h.snippet for h in hits)
            if mode == "semantic":  # the project's part of the unfiltered ranking
                assert where(hits) == [w for w in where(before[mode]) if int(w[0][1:]) < 4][: len(hits)]


async def test_raw_semantic_matching_many_goes_through_the_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "codes.db"
    await _notes(path)
    async with open_database(path) as db:
        assert (await db.index_status()).semantic == "vec0"
        exact = {
            q: await db.search(q, mode="semantic", raw=True, embedder=HashingEmbedder(), k=5)
            for q in ("parser", "pizza", "parser NOT pizza")
        }
        calls = _exact(monkeypatch)
        monkeypatch.setattr(search_module, "EXACT_ROWS", 10)
        monkeypatch.setattr(search_module, "CANDIDATES", 100)
        # 60 matches > EXACT_ROWS: through the codes; with 100 candidates every row is re-scored
        assert where(
            await db.search("parser", mode="semantic", raw=True, embedder=HashingEmbedder(), k=5)
        ) == where(exact["parser"])
        assert calls == []
        # 24 of 60 match: more candidates are asked for until enough of them match
        monkeypatch.setattr(search_module, "CANDIDATES", 12)
        hits = await db.search("pizza", mode="semantic", raw=True, embedder=HashingEmbedder(), k=5)
        # (the codes are approximate: the nearest matching candidates, not always the exact top 5)
        assert calls == [] and len(hits) == 5 and all("pizza" in h.snippet for h in hits)
        assert hits[0].score == exact["pizza"][0].score
        # too few matches among the most candidates vec0 gives: the exact scan answers
        monkeypatch.setattr(search_module, "VEC_K_MAX", 12)
        hits = await db.search("parser NOT pizza", mode="semantic", raw=True, embedder=HashingEmbedder(), k=5)
        assert calls == ["exact"] and where(hits) == where(exact["parser NOT pizza"])
