"""An agent that saves its resumable state after every turn until it is killed (SIGKILL tests).

Usage: ``state_worker.py DB LOG``

It loads the state saved with session "agent" (if any), restores it into an AgentContext and
carries on from there: each turn adds a user prompt, two messages to each of two subagents'
histories and an extra usage record, then saves. Before each save it writes ``I n`` to LOG,
after the save returned ``A n`` (one ``os.write`` per line). Prints "ready" before the first turn.
"""

from __future__ import annotations

import asyncio
import os
import sys

from axio_context.state import AgentContext, ExtraUsageRecord, ResumableState, RunUsage
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.state import load_state, save_state

SUBAGENTS = ("explorer", "coder")


class AgentState(ResumableState):
    """A subclass, as an application would write it: its field must survive the kill too."""

    turn: int = 0


class Agent(AgentContext):
    state_type = AgentState
    turn: int = 0


def turn_messages(name: str, n: int) -> list[dict[str, object]]:
    return [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": f"{name} task {n}"}]},
        {"kind": "response", "parts": [{"part_kind": "text", "content": f"{name} result {n} " + "x" * 200}]},
    ]


async def main(db: str, log_path: str) -> None:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    async with connect(db) as conn:
        store = SQLiteContextStore(conn, "agent", project="crash")
        state = await load_state(store, AgentState)
        ctx = Agent().with_state(state)
        if state is not None:
            ctx.turn = state.turn
        print("ready", flush=True)
        async with ctx:
            while True:
                ctx.turn += 1
                n = ctx.turn
                ctx.user_prompts.append(f"turn {n}")
                for name in SUBAGENTS:
                    ctx.subagent_history.setdefault(name, []).extend(turn_messages(name, n))
                ctx.extra_usages.append(
                    ExtraUsageRecord(
                        uuid=f"u{n}", agent="explorer", model_id="m", usage=RunUsage(input_tokens=n)
                    )
                )
                os.write(log, f"I {n}\n".encode())
                await save_state(store, ctx.export_state(include_extra_usages=True))
                os.write(log, f"A {n}\n".encode())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
