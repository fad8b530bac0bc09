"""Two real processes save the same loaded revision: exactly one wins, the other gets
ConversationConflict, and the store holds the winner's turn only."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from pydantic_ai import messages as pm
from pydantic_ai.conversation import Conversation

from axio_context_pydantic_ai import AxioConversationStore
from tests.support.backends import Backend

ROOT = Path(__file__).resolve().parents[3]


async def test_two_processes_one_revision_one_winner(backend_db: Backend) -> None:
    db = backend_db.where
    async with backend_db.open() as handle:
        store = AxioConversationStore(handle)
        await store.save(
            Conversation(conversation_id="c", messages=[pm.ModelRequest(parts=[pm.UserPromptPart("hi")])])
        )
    outcomes = await asyncio.to_thread(_race, db)
    winner = ["one", "two"][outcomes.index({"saved": True})]
    async with backend_db.open() as handle:
        loaded = await AxioConversationStore(handle).load("c")
        assert loaded is not None
        assert [m.parts[0].content for m in loaded.messages] == [
            "hi",
            f"from {winner}",
            f"answer to {winner}",
        ]  # type: ignore[union-attr]
        assert len(await backend_db.store("c").get_history()) == 3  # the loser wrote nothing


def _race(db: str) -> list[dict[str, bool]]:
    """Start both savers, let them load, then let them save at once; their outcomes."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.procs.pydai_saver", db, "c", name],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("one", "two")
    ]
    try:
        revisions = set()
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline().split()
            assert line[:1] == ["loaded"], p.stderr.read() if p.stderr else ""
            revisions.add(line[1])
        assert len(revisions) == 1  # both hold the same revision
        for p in procs:  # both save as close together as two processes can
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outcomes = []
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            outcomes.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert sorted(map(str, outcomes)) == sorted(map(str, [{"saved": True}, {"conflict": True}]))
    return outcomes
