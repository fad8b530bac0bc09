"""A database whose every stored text field is hostile: escape sequences that retitle the
terminal, clear it and write the clipboard (OSC 52), a C1 CSI, a bidi override, and Rich markup
that would close a tag that is not open or make a live link. For the terminal and browser tests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from axio_context import Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.memory import Document, Entity, Relationship
from axio_context.pools import ContextItem
from axio_context.state import ResumableState
from axio_context.testing import text
from axio_context.usage_limits import RequestUsage
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.memory import SQLiteBlobStore, SQLiteGraphStore, SQLiteTaskStore, SQLiteVectorStore
from axio_context_sqlite.pools import SQLiteContextPool
from axio_context_sqlite.state import save_state
from axio_context_sqlite.usage import SQLiteUsageRecorder

#: What a model can be talked into writing: every class of control, and markup.
ESCAPES: Final = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b31m\u202eexe.txt\u2066"
MARKUP: Final = "[/][link=https://attacker.invalid/x]click me[/link][/b]"
HOSTILE: Final = f"{ESCAPES}{MARKUP}"

#: Characters no terminal output may hold: ESC, BEL, CR (alone), DEL, C1, bidi controls.
FORBIDDEN: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

SESSION: Final = f"s-{HOSTILE}"
ENTITY: Final = f"e-{HOSTILE}"
BOARD_CONVERSATION: Final = f"c-{HOSTILE}"
POOL: Final = "docs"
BLOB: Final = "logs/a.txt"
COLLECTION: Final = "kb"


async def fill(path: Path) -> dict[str, str]:
    """Write the hostile values into ``path``; returns the ids the commands take."""
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, SESSION, project=f"/work/{HOSTILE}")
        await store.append(text("user", f"pwned question {HOSTILE}"))
        await store.append(
            Message(
                role="assistant",
                content=[
                    TextBlock(text=f"pwned answer {HOSTILE}"),
                    ToolUseBlock(id=f"call-{HOSTILE}", name=f"tool{MARKUP}", input={"q": HOSTILE}),
                ],
            )
        )
        await store.append(
            Message(role="user", content=[ToolResultBlock(tool_use_id=f"call-{HOSTILE}", content=HOSTILE)])
        )
        await store.set_title(f"title {HOSTILE}")
        fork = await store.fork()
        await fork.append(text("user", f"fork {HOSTILE}"))
        await save_state(store, ResumableState(user_prompts=[HOSTILE], handoff_message=HOSTILE))
        await SQLiteUsageRecorder(conn, f"/work/{HOSTILE}").record(
            RequestUsage(input_tokens=3, output_tokens=4), session_id=SESSION, agent=HOSTILE, model=HOSTILE
        )

        await SQLiteVectorStore(conn).add(
            [Document(f"d-{HOSTILE}", HOSTILE, [1.0, 0.0], {"k": HOSTILE})], collection=COLLECTION
        )
        await SQLiteBlobStore(conn).upload(BLOB, b"alpha", "text/plain")
        graph = SQLiteGraphStore(conn)
        await graph.add_entities([Entity(ENTITY, f"T{HOSTILE}", {"p": HOSTILE}), Entity("plain", "Plain")])
        await graph.add_relationships([Relationship("r1", ENTITY, "plain", f"R{HOSTILE}", {"p": HOSTILE})])
        board = await SQLiteTaskStore(conn).create_task_list(
            BOARD_CONVERSATION, [f"task {HOSTILE}"], agent_id=f"a-{HOSTILE}", agent_label=f"l-{HOSTILE}"
        )
        pool = await SQLiteContextPool.open(conn, POOL, limit=10, tags=[f"t-{HOSTILE}"])
        await pool.add(ContextItem({"k": HOSTILE}, f"desc {HOSTILE}", f"i-{HOSTILE}"))
        branch = await pool.branch(name=f"b-{HOSTILE}")
        await conn.execute(
            "UPDATE context_pools SET hooks = ? WHERE name = ?",
            ('{"after_add": ["h-\\u001b]52;c;cHduZWQ=\\u0007[/]"]}', POOL),
        )
        # A content type an older version let in (C1 passed its check): the printers must cope.
        await conn.execute(
            "UPDATE memory_blob_keys SET content_type = ? WHERE key = ?", (f"text/{ESCAPES}", BLOB)
        )
        await conn.commit()
        del branch
    return {"session": SESSION, "entity": ENTITY, "board": board.id, "pool": POOL, "branch": f"b-{HOSTILE}"}
