"""``axio-context import-axio``: migrating a database written by axio-context-sqlite 0.12.2.

The source database is written two ways, and every test runs on both:

- ``peer``: by the REAL axio-context-sqlite 0.12.2, replayed from the SQL it left, committed
  under ``tests/fixtures/axio/`` (``tests/fixtures/axio_fixtures.py``), so these run everywhere.
  ``python tests/fixtures/make_axio_fixture.py --record`` writes them again by running these
  tests through the peer's Python 3.12 (``$AXIO_PEER_PYTHON``, the bench's ``.bench-venv-peer``,
  or ``/tmp/peer``).
- ``replica``: in-process, with the peer's exact table layout and payload encodings (JSON,
  ``plain:`` below 512 bytes, ``gzip:``+base64 above), copied from its 0.12.2 source.

Both also get one row in the bare-JSON encoding older peer versions wrote.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import sqlite3
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axio_context import Message, UnknownBlock
from axio_context.testing import every_block_message, text
from tests.fixtures import axio_fixtures
from tests.support.cli_helpers import check_storage, invoke, invoke_json

REPO = Path(__file__).resolve().parents[2]
GENERATOR = Path(__file__).resolve().parents[1] / "fixtures" / "make_axio_fixture.py"

Ops = list[list[Any]]
Builder = Callable[[Path, Ops], dict[str, str]]


def _peer_python() -> str | None:
    candidates = [
        os.environ.get("AXIO_PEER_PYTHON"),
        str(REPO / ".bench-venv-peer" / "bin" / "python"),
        "/tmp/peer/bin/python",
    ]
    for candidate in candidates:
        if not candidate or not Path(candidate).is_file():
            continue
        probe = subprocess.run(
            [candidate, "-I", "-c", "from axio_context_sqlite.store import compress_payload; import axio"],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            return candidate
    return None


PEER_PYTHON = _peer_python()


def build_with_peer(path: Path, ops: Ops) -> dict[str, str]:
    """Run the operations through the real peer package in its own interpreter."""
    assert PEER_PYTHON is not None, "recording needs axio-context-sqlite 0.12.2's interpreter"
    spec = path.with_suffix(f".ops-{uuid.uuid4().hex[:6]}.json")
    spec.write_text(json.dumps(ops))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [PEER_PYTHON, "-I", str(GENERATOR), str(path), str(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=path.parent,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


# The replica: axio-context-sqlite 0.12.2's schema and writes, statement for statement.
_REPLICA_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS axio_context_messages ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  session_id TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  position INTEGER NOT NULL,"
    "  role TEXT NOT NULL,"
    "  content TEXT NOT NULL,"
    "  created_at TEXT NOT NULL DEFAULT (datetime('now')),"
    "  UNIQUE(session_id, position)"
    ")",
    "CREATE INDEX IF NOT EXISTS idx_axio_context_messages_session ON axio_context_messages(session_id)",
    "CREATE INDEX IF NOT EXISTS idx_axio_context_messages_project ON axio_context_messages(project)",
    "CREATE TABLE IF NOT EXISTS axio_context_tokens ("
    "  session_id TEXT NOT NULL,"
    "  project TEXT NOT NULL,"
    "  input_tokens INTEGER NOT NULL DEFAULT 0,"
    "  output_tokens INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(session_id, project)"
    ")",
]


def _compress_payload(data: str) -> str:
    raw = data.encode()
    if len(raw) < 512:
        return "plain:" + data
    return "gzip:" + base64.b64encode(gzip.compress(raw, compresslevel=6)).decode()


def build_replica(path: Path, ops: Ops) -> dict[str, str]:
    """The same operations, written the way the peer writes them, without the peer."""
    ids: dict[str, str] = {}
    db = sqlite3.connect(path)
    db.create_function("compress_payload", 1, _compress_payload, deterministic=True)
    db.execute("PRAGMA journal_mode=WAL")
    for statement in _REPLICA_SCHEMA:
        db.execute(statement)
    for op in ops:
        kind, alias, project = op[0], op[1], op[2]
        sid = ids.setdefault(alias, alias)
        if kind == "append":
            content = json.dumps(Message.from_dict(op[3]).to_dict()["content"])
            db.execute(
                "INSERT INTO axio_context_messages (session_id, project, position, role, content)"
                "VALUES (?, ?, (SELECT COUNT(*) FROM axio_context_messages WHERE session_id = ?), ?,"
                " compress_payload(?))",
                (sid, project, sid, op[3]["role"], content),
            )
        elif kind == "add_tokens":
            db.execute(
                "INSERT INTO axio_context_tokens (session_id, project, input_tokens, output_tokens)"
                "VALUES (?, ?, ?, ?) ON CONFLICT(session_id, project) DO UPDATE "
                "SET input_tokens = input_tokens + excluded.input_tokens, "
                "    output_tokens = output_tokens + excluded.output_tokens",
                (sid, project, op[3], op[4]),
            )
        elif kind == "set_tokens":
            db.execute(
                "INSERT INTO axio_context_tokens (session_id, project, input_tokens, output_tokens)"
                "VALUES (?, ?, ?, ?) "
                "ON CONFLICT(session_id, project) DO UPDATE SET input_tokens=?, output_tokens=?",
                (sid, project, op[3], op[4], op[3], op[4]),
            )
        elif kind == "fork":
            new = uuid.uuid4().hex
            db.execute(
                "INSERT INTO axio_context_messages (session_id, project, position, role, content)"
                "SELECT ?, project, position, role, content FROM axio_context_messages WHERE session_id = ?",
                (new, sid),
            )
            db.execute(
                "INSERT OR IGNORE INTO axio_context_tokens"
                " (session_id, project, input_tokens, output_tokens) "
                "SELECT ?, project, input_tokens, output_tokens FROM axio_context_tokens "
                "WHERE session_id = ? AND project = ?",
                (new, sid, project),
            )
            ids[op[3]] = new
        db.commit()
    db.close()
    return ids


def build_recorded(path: Path, ops: Ops) -> dict[str, str]:
    """The operations' file as the real peer wrote it, from the committed dumps (or recording them)."""
    return axio_fixtures.build(path, ops, build_with_peer)


BUILDERS = [
    pytest.param(build_replica, id="replica"),
    pytest.param(build_recorded, id="peer"),
]


@pytest.fixture(params=BUILDERS)
def build(request: pytest.FixtureRequest) -> Builder:
    return request.param  # type: ignore[no-any-return]


def _d(message: Message) -> dict[str, Any]:
    return message.to_dict()


LONG = "a long tool transcript line\n" * 60  # > 512 bytes of JSON: stored gzip:+base64

# every block type axio 0.12 knows (it refuses unknown types, so it never stores one)
AXIO_BLOCKS = [
    Message(role=m.role, content=[b for b in m.content if not isinstance(b, UnknownBlock)])
    for m in every_block_message()
]
ALPHA = [*AXIO_BLOCKS, text("assistant", LONG), text("user", "short one")]
FORK_EXTRA = [text("assistant", "only in the fork")]
BETA = [text("user", "beta question"), text("assistant", "beta answer")]
MULTI_P1 = [text("user", "written from project one")]
MULTI_P2 = [text("assistant", "written from project two")]

OPS: Ops = [
    *[["append", "alpha", "/proj/a", _d(m)] for m in ALPHA],
    ["add_tokens", "alpha", "/proj/a", 100, 50],
    ["add_tokens", "alpha", "/proj/a", 1, 2],
    ["fork", "alpha", "/proj/a", "alpha-fork"],
    *[["append", "alpha-fork", "/proj/a", _d(m)] for m in FORK_EXTRA],
    *[["append", "beta", "/proj/b", _d(m)] for m in BETA],
    ["set_tokens", "beta", "/proj/b", 5, 6],
    ["set_tokens", "gamma", "/proj/c", 7, 8],
    *[["append", "multi", "/p1", _d(m)] for m in MULTI_P1],
    *[["append", "multi", "/p2", _d(m)] for m in MULTI_P2],
    ["add_tokens", "multi", "/p1", 9, 10],
    ["add_tokens", "multi", "/p2", 3, 4],
]


def _source(tmp_path: Path, build: Builder) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "axio.db"
    ids = build(path, OPS)
    db = sqlite3.connect(path)
    content = db.execute(
        "SELECT content FROM axio_context_messages WHERE session_id = 'beta' AND position = 0"
    ).fetchone()[0]
    assert content.startswith("plain:")
    # what axio-context-sqlite wrote before it compressed: bare JSON
    db.execute(
        "UPDATE axio_context_messages SET content = ? WHERE session_id = 'beta' AND position = 0",
        (content[6:],),
    )
    encodings = {r[0] for r in db.execute("SELECT substr(content, 1, 5) FROM axio_context_messages")}
    assert {"plain", "gzip:", '[{"ty'} <= encodings
    db.commit()
    db.close()
    return path, ids


def _full(session_id: str) -> list[Message]:
    doc = invoke_json("show", session_id, "--json", "--full")
    return [Message.from_dict({"role": m["role"], "content": m["content"]}) for m in doc["messages"]]


def test_import_axio_keeps_every_session_message_project_and_token_count(
    tmp_path: Path, build: Builder
) -> None:
    source, ids = _source(tmp_path, build)
    fork_id = ids["alpha-fork"]
    report = invoke_json("import-axio", source, "--json")
    assert sorted(report["added"]) == sorted(["alpha", fork_id, "beta", "multi", "gamma"])
    assert report["messages"] == len(ALPHA) * 2 + len(FORK_EXTRA) + len(BETA) + 2
    assert (report["updated"], report["unchanged"], report["conflicts"]) == ([], [], [])

    assert _full("alpha") == ALPHA
    assert _full(fork_id) == ALPHA + FORK_EXTRA
    assert _full("beta") == BETA
    assert _full("multi") == MULTI_P1 + MULTI_P2
    assert _full("gamma") == []

    rows = {r["session_id"]: r for r in invoke_json("list-sessions", "--json")}
    assert {k: (r["project"], r["input_tokens"], r["output_tokens"]) for k, r in rows.items()} == {
        "alpha": ("/proj/a", 101, 52),
        fork_id: ("/proj/a", 101, 52),
        "beta": ("/proj/b", 5, 6),
        "gamma": ("/proj/c", 7, 8),
        "multi": ("/p1", 9, 10),
    }
    assert rows["alpha"]["preview"] == "plain ascii"
    multi = invoke_json("show", "multi", "--json")["session"]
    assert multi["metadata"] == {"axio_projects": ["/p1", "/p2"], "axio_tokens_by_project": {"/p2": [3, 4]}}

    # every message keeps the time the peer stored for it
    peer = sqlite3.connect(source)
    stamps = peer.execute(
        "SELECT created_at FROM axio_context_messages WHERE session_id = 'alpha' ORDER BY position"
    ).fetchall()
    peer.close()
    exported = json.loads(invoke("export", "alpha").stdout)["sessions"][0]
    assert [m["created_at"] for m in exported["messages"]] == [
        s[0].replace(" ", "T") + ".000+00:00" for s in stamps
    ]
    assert exported["created_at"] == exported["messages"][0]["created_at"]
    check_storage(Path(os.environ["AXIO_CONTEXT_DB"]))


def test_import_axio_is_idempotent_and_picks_up_new_messages(tmp_path: Path, build: Builder) -> None:
    source, ids = _source(tmp_path, build)
    invoke("import-axio", source)
    before = invoke("export", "--all").stdout_bytes
    again = invoke("import-axio", source)
    assert again.stdout == "0 added, 0 updated, 5 unchanged; 0 message(s) written\n"
    assert invoke("export", "--all").stdout_bytes == before

    # the axio app kept going: more messages and tokens in one session, a brand-new session
    more = [text("user", "later question"), text("assistant", "later answer")]
    build(
        source,
        [
            *[["append", "alpha", "/proj/a", _d(m)] for m in more],
            ["add_tokens", "alpha", "/proj/a", 10, 10],
            ["append", "delta", "/proj/d", _d(text("user", "new session"))],
        ],
    )
    # and this side continued another session after the first migration
    invoke("fork", "beta", "--id", "beta-here")
    report = invoke_json("import-axio", source, "--json")
    assert (report["added"], report["updated"]) == (["delta"], ["alpha"])
    assert sorted(report["unchanged"]) == sorted([ids["alpha-fork"], "beta", "gamma", "multi"])
    assert report["messages"] == 3
    assert _full("alpha") == ALPHA + more
    assert invoke_json("show", "alpha", "--json")["session"]["input_tokens"] == 111
    assert invoke_json("import-axio", source, "--json")["unchanged"].__len__() == 6
    check_storage(Path(os.environ["AXIO_CONTEXT_DB"]))


def test_import_axio_conflicts_are_left_alone_unless_replace(tmp_path: Path, build: Builder) -> None:
    source, _ = _source(tmp_path, build)
    invoke("import-axio", source)
    invoke("rm", "-y", "beta")
    invoke("import", _one_session_file(tmp_path, "beta", "something else entirely"))
    result = invoke("import-axio", source)
    assert result.stdout == "0 added, 0 updated, 4 unchanged; 0 message(s) written\n"
    assert result.stderr == "1 session(s) differ here and were left alone (beta); --replace overwrites them\n"
    assert _full("beta") == [text("user", "something else entirely")]
    replaced = invoke_json("import-axio", source, "--replace", "--json")
    assert replaced["replaced"] == ["beta"]
    assert _full("beta") == BETA
    check_storage(Path(os.environ["AXIO_CONTEXT_DB"]))


def _one_session_file(tmp_path: Path, session_id: str, body: str) -> Path:
    stamp = "2025-01-01T00:00:00.000+00:00"
    doc = {
        "format": "axio-context",
        "version": 1,
        "sessions": [
            {
                "id": session_id,
                "project": "/proj/b",
                "created_at": stamp,
                "updated_at": stamp,
                "message_count": 1,
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": body}], "created_at": stamp}
                ],
            }
        ],
    }
    path = tmp_path / f"{session_id}.json"
    path.write_text(json.dumps(doc))
    return path


def test_import_axio_bad_row_names_it_and_writes_nothing(tmp_path: Path) -> None:
    source, _ = _source(tmp_path, build_replica)
    db = sqlite3.connect(source)
    db.execute("UPDATE axio_context_messages SET content = 'gzip:!!!notbase64' WHERE session_id = 'multi'")
    db.commit()
    db.close()
    result = invoke("import-axio", source, ok=False)
    assert result.exit_code == 1
    assert f"{source}: session 'multi' position 0:" in result.stderr
    assert "Traceback" not in result.output
    # Nothing written: not even the database the command would have created.
    assert not (tmp_path / "cli").exists()


def test_import_axio_refuses_other_files(tmp_path: Path) -> None:
    ours = tmp_path / "ours.db"
    invoke("--db", ours, "import", _one_session_file(tmp_path, "x", "y"))
    result = invoke("import-axio", ours, ok=False)
    assert result.exit_code == 1
    assert "has no axio_context_messages table" in result.stderr
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    result = invoke("import-axio", junk, ok=False)
    assert result.exit_code == 1 and "not an SQLite database" in result.stderr


def _peer_rows(path: Path, ids: dict[str, str]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A peer file's messages (aliases for session ids, payloads decoded) and token rows."""
    alias = {real: name for name, real in ids.items()}

    def content(stored: str) -> tuple[str, Any]:
        if stored.startswith("gzip:"):
            return "gzip", json.loads(gzip.decompress(base64.b64decode(stored[5:])))
        return "plain", json.loads(stored.removeprefix("plain:"))

    db = sqlite3.connect(path)
    try:
        messages = [
            (alias.get(sid, sid), project, position, role, *content(stored))
            for sid, project, position, role, stored in db.execute(
                "SELECT session_id, project, position, role, content FROM axio_context_messages ORDER BY id"
            )
        ]
        tokens = [(alias.get(r[0], r[0]), *r[1:]) for r in db.execute("SELECT * FROM axio_context_tokens")]
    finally:
        db.close()
    return messages, sorted(tokens)


def test_the_replica_writes_what_the_real_peer_wrote(tmp_path: Path) -> None:
    """Every test runs on both builders; this holds the replica to the recorded real peer: the
    same rows, positions, projects, payloads, encodings (plain or gzip) and token totals."""
    peer = tmp_path / "peer.db"
    replica = tmp_path / "replica.db"
    peer_rows = _peer_rows(peer, build_recorded(peer, OPS))
    assert peer_rows == _peer_rows(replica, build_replica(replica, OPS))
    assert {m[4] for m in peer_rows[0]} == {"plain", "gzip"}
    assert len(peer_rows[0]) == len(ALPHA) * 2 + len(FORK_EXTRA) + len(BETA) + 2
