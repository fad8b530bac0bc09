"""Generate docs/storage.md's list of schema versions from the migrations themselves.

The versions, their numbers and names, come from ``schema.sql``'s ``-- version: N name`` sections
as :func:`axio_context_sqlite.store.schema.migrations` reads them; what each adds, in one line, is
:data:`DESCRIPTIONS` here, by step name (a step added to ``schema.sql`` without its line here
fails the docs test). Run ``python docs/gen_storage.py`` after adding a step (it rewrites the part
of docs/storage.md between the markers); ``python docs/gen_storage.py --check`` exits 1 when that
part is out of date (the docs tests check the same).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from axio_context_sqlite.store.schema import migrations

STORAGE_MD = Path(__file__).resolve().parent / "storage.md"
BEGIN = "<!-- versions: generated from schema.sql by docs/gen_storage.py; do not edit by hand -->"
END = "<!-- end of the generated versions -->"

#: What each migration step adds, one line each, by the step's name in ``schema.sql``.
DESCRIPTIONS: dict[str, str] = {
    "initial": "sessions (with their lineage and token totals), messages, media (`blobs`), "
    "compaction checkpoints, settings",
    "search_indexes": "keyword search (the FTS5 table `messages_fts` and its queue `fts_pending`), "
    "embeddings (`message_vectors`); existing messages indexed",
    "formatted_times": "listing times stored pre-formatted (generated columns; the sessions table rebuilt)",
    "zstd_dictionaries": "compression dictionaries (`zstd_dicts`; read only since dictionaries were removed)",
    "sealed_chunks": "sealed chunks (`chunks`): runs of messages stored and compressed together",
    "application_id_and_session_id_limit": "the file marked as axio-context's (`PRAGMA application_id`); "
    "session ids limited to 256 characters",
    "quarantine": "`quarantine`: rows that did not decode, moved aside by `check --quarantine`",
    "memory_stores": "the memory stores: vector collections, blobs by key, the graph, task lists",
    "message_extras": "a message's optional id, timestamp and metadata (`message_extras`)",
    "resumable_state": "resumable state (`session_states`) and subagent sessions owned by a session "
    "(`owner_id`, `agent_name`)",
    "context_pools": "context queues and pools (`context_pools`, their entries, vectors and keyword index)",
    "usage_records": "per-request usage (`usage_records`) and its rollups (`usage_rollups`)",
    "agent_runtime": "the agent runtime: agents' sessions, runs, each message's run, the messages "
    "`clear_run` hid",
    "conversation_log": "a framework's conversation log (`conversation_records`, `conversation_entries`; "
    "pydantic-ai's ConversationStore)",
    "activity_and_visible_counts": "listings by last activity (`updated_at` indexes); each session's "
    "count of hidden positions and the token totals a fork started with",
    "expiry": "a time to live on vector documents, blob keys and task boards (`ttl_ms`, `expires_at` "
    "and a partial index on it)",
    "memory_blocks": "memory blocks (`memory_blocks`), every version of each (`memory_block_versions`) "
    "and the agents a shared block is attached to (`memory_block_agents`)",
    "session_expiry": "a time to live on sessions (`sessions.ttl_ms`, `expires_at` and a partial index "
    "on it)",
    "message_turns": "a transcript's user turns (`message_turns`: number, position, time and content of "
    "each user message, keyed as its message row, so a fork sees its parent's), for openai-agents' "
    "advanced session",
    "pool_item_expiry": "a time to live on context pool items (`context_pool_entries.ttl_ms`, `expires_at` "
    "and a partial index on it)",
}


def table() -> str:
    """The generated part: the list of versions as a Markdown table, between the markers."""
    rows = [f"| {step.version} | `{step.name}` | {DESCRIPTIONS[step.name]} |" for step in migrations()]
    header = ["<!-- not figures: schema versions -->", "| version | name | adds |", "|---|---|---|"]
    return "\n".join([BEGIN, *header, *rows, END])


def render(current: str) -> str:
    """``current`` (the text of docs/storage.md) with its list of versions and the newest version's
    number in the prose (`` `-- version: N` ``, after `` `-- version: 1` to ``) made current."""
    if current.count(BEGIN) != 1 or current.count(END) != 1:
        raise ValueError("docs/storage.md needs exactly one pair of the generated versions' markers")
    head, rest = current.split(BEGIN)
    _, tail = rest.split(END)
    newest = migrations()[-1].version
    head = re.sub(r"(`-- version: 1` to `-- version: )\d+`", rf"\g<1>{newest}`", head)
    return head + table() + tail


def main(argv: list[str], target: Path = STORAGE_MD) -> int:
    """Rewrite ``target``'s versions, or with ``--check`` report whether they are current (1 if not)."""
    current = target.read_text(encoding="utf-8")
    text = render(current)
    if argv[1:] == ["--check"]:
        if text != current:
            print(f"{target} is out of date: run `python docs/gen_storage.py`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
