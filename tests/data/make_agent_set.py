"""Write tests/data/agent_retrieval.json: the labelled set of agent transcripts and queries.

Run ``python -m tests.data.make_agent_set`` (``--check`` compares with the file instead of
writing it). Deterministic: the same episodes and seed give the same bytes.

How it is made. :mod:`.agent_episodes` holds 29 hand-written coding-agent episodes in 15
projects (a problem, a tool call and its output, a fix, a check, a follow-up and its answer) and
six queries for each: two paraphrases, two identifiers or error strings, two keyword questions.
This script lays each project's episodes out as one session, in the shape an agent writes them
(text, ``tool_use`` and ``tool_result`` blocks), with routine agent chatter between them drawn
from a seeded pool (acknowledgements, ``git status``, test runs), and checks every query:

- a paraphrase shares no word with its target: each of its words is looked up in an FTS5 table
  (the store's Porter tokenizer) holding only the target, and must not match;
- an identifier occurs in its own episode only, and every message holding it is relevant;
- every target exists.

Limits, honestly: one author wrote the episodes and their paraphrases, so the paraphrases carry
that author's habits; the transcripts are short (7 messages an episode) and in English; the
"no shared word" rule is stricter than real recollection (people do reuse some words), which
makes the paraphrase class the hardest case for keyword search on purpose.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import msgspec
import sqlean

from axio_context import Message
from axio_context.messages import text_columns
from axio_context_sqlite.search.fts import FTS_TOKENIZE, match_terms

from .agent_episodes import EPISODES, Episode, roles

OUT = Path(__file__).with_name("agent_retrieval.json")
SEED = 24

_CHATTER_USER = [
    "ok, go ahead",
    "Sounds good.",
    "thanks, that works",
    "Can you commit that?",
    "Let's keep going.",
    "Please run the whole suite once more.",
]
_CHATTER_ASSISTANT = [
    "Committed on the feature branch.",
    "Running the full test suite again.",
    "Let me check the git log first.",
    "I'll update the changelog as well.",
    "Pushed; the CI run has started.",
    "Done. Anything else?",
]
_CHATTER_TOOL = [
    ("bash", {"command": "git status --short"}, " M CHANGELOG.md\n"),
    (
        "bash",
        {"command": "git log --oneline -3"},
        "a1b2c3d wip\n9f8e7d6 tidy imports\n5a4b3c2 bump version\n",
    ),
    ("run_tests", {"path": "tests"}, "=== 212 passed, 3 skipped in 14.02s ==="),
]


def _text(
    role: str, text: str, tool: tuple[str, dict[str, Any]] | None = None, tid: str = ""
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if tool is not None:
        content.append({"type": "tool_use", "id": tid, "name": tool[0], "input": tool[1]})
    return {"role": role, "content": content}


def _result(tid: str, output: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": output}]}


def _look(tool: tuple[str, dict[str, Any], str]) -> str:
    name, args, _ = tool
    what = args.get("path") or args.get("command") or args.get("pattern") or name
    return f"Let me check: {what}"


def episode_messages(ep: Episode, tag: str) -> list[dict[str, Any]]:
    """The seven messages of an episode, in :func:`.agent_episodes.roles` order."""
    name, args, output = ep["tool"]
    cname, cargs, coutput = ep["check"]
    return [
        _text("user", ep["problem"]),
        _text("assistant", _look(ep["tool"]), (name, args), f"{tag}a"),
        _result(f"{tag}a", output),
        _text("assistant", ep["fix"], (cname, cargs), f"{tag}b"),
        _result(f"{tag}b", coutput),
        _text("user", ep["followup"]),
        _text("assistant", ep["answer"]),
    ]


def _chatter(rng: random.Random, tag: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [_text("user", rng.choice(_CHATTER_USER))]
    name, args, result = rng.choice(_CHATTER_TOOL)
    out.append(_text("assistant", rng.choice(_CHATTER_ASSISTANT), (name, args), f"{tag}c"))
    out.append(_result(f"{tag}c", result))
    return out


def _searchable(message: dict[str, Any]) -> str:
    body, tool = text_columns(Message.from_dict(message))
    return f"{body}\n{tool}"


def build() -> tuple[dict[str, Any], list[str]]:
    """The set as a JSON-ready dict, and the problems found (empty when every query is sound)."""
    rng = random.Random(SEED)
    by_project: dict[str, list[int]] = {}
    for i, ep in enumerate(EPISODES):
        by_project.setdefault(ep["project"], []).append(i)
    sessions: list[dict[str, Any]] = []
    where: dict[int, tuple[str, int]] = {}  # episode -> (session id, position of its first message)
    owner: dict[str, int] = {}  # message id -> episode (chatter: -1)
    texts: dict[str, str] = {}
    for n, (project, eps) in enumerate(by_project.items()):
        sid = f"a{n:02d}-{project}"
        messages: list[dict[str, Any]] = []
        for j, e in enumerate(eps):
            if j or rng.random() < 0.5:
                for m in _chatter(rng, f"{sid}-{j}"):
                    owner[f"{sid}:{len(messages)}"] = -1
                    messages.append(m)
            where[e] = (sid, len(messages))
            for m in episode_messages(EPISODES[e], f"{sid}-{j}"):
                owner[f"{sid}:{len(messages)}"] = e
                messages.append(m)
        for pos, m in enumerate(messages):
            texts[f"{sid}:{pos}"] = _searchable(m)
        sessions.append({"id": sid, "project": project, "messages": messages})

    problems: list[str] = []
    queries: list[dict[str, Any]] = []
    fts = sqlean.connect(":memory:")
    fts.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZE}')")
    for e, ep in enumerate(EPISODES):
        sid, first = where[e]

        def target(role: str, sid: str = sid, first: int = first) -> str:
            return f"{sid}:{first + roles().index(role)}"

        for text, role in ep["para"]:
            mid = target(role)
            fts.execute("DELETE FROM t")
            fts.execute("INSERT INTO t (x) VALUES (?)", (texts[mid],))
            shared = [
                w
                for w in match_terms(text)
                if fts.execute("SELECT 1 FROM t WHERE t MATCH ?", (w,)).fetchone()
            ]
            if shared:
                problems.append(f"paraphrase {text!r} shares {shared} with {mid}")
            queries.append({"query": text, "kind": "paraphrase", "relevant": [mid]})
        for text in ep["ident"]:
            holders = [m for m, t in texts.items() if text.casefold() in t.casefold()]
            strangers = [m for m in holders if owner[m] != e]
            if not holders or strangers:
                problems.append(f"identifier {text!r}: found in {holders or 'no message'}")
            queries.append({"query": text, "kind": "identifier", "relevant": holders})
        for text, role in ep["kw"]:
            queries.append({"query": text, "kind": "keyword", "relevant": [target(role)]})
    fts.close()
    doc = {
        "description": (
            "Labelled retrieval set of coding-agent transcripts, written by tests/data/make_agent_set.py "
            "from the episodes in tests/data/agent_episodes.py (see its docstring for how and its limits). "
            "kind: paraphrase (shares no word with its target), identifier (identifiers and error "
            "strings as pasted), keyword (plain keyword questions)."
        ),
        "sessions": sessions,
        "queries": queries,
    }
    return doc, problems


def encode(doc: dict[str, Any]) -> bytes:
    return msgspec.json.format(msgspec.json.encode(doc), indent=1) + b"\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare with the file; write nothing")
    args = parser.parse_args(argv)
    doc, problems = build()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    data = encode(doc)
    if args.check:
        same = OUT.exists() and OUT.read_bytes() == data
        print("up to date" if same else f"{OUT} differs from what the episodes give", file=sys.stderr)
        return 0 if same else 1
    OUT.write_bytes(data)
    kinds: dict[str, int] = {}
    for q in doc["queries"]:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    n = sum(len(s["messages"]) for s in doc["sessions"])
    print(
        f"wrote {OUT}: {len(doc['sessions'])} sessions, {n} messages, {len(doc['queries'])} queries {kinds}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
