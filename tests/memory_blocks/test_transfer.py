"""Blocks with their versions leave one database and arrive in another as they were:
``blocks export`` / ``blocks import`` between SQLite and PostgreSQL, both ways."""

from __future__ import annotations

import asyncio
from pathlib import Path

from axio_context_postgres.embedded import EmbeddedServer
from tests.support.cli_helpers import invoke, invoke_json
from tests.support.postgres import new_database

from .sample import dump_blocks, fill_blocks


def test_export_then_import_across_backends(tmp_path: Path, pg_server: EmbeddedServer) -> None:
    sqlite = str(tmp_path / "a.db")
    postgres = new_database(pg_server, "axio_blocks_transfer")
    rows = asyncio.run(fill_blocks(sqlite))
    assert sorted(len(r.versions) for r in rows) == [1, 3]
    out = tmp_path / "blocks.json"
    invoke("--db", sqlite, "blocks", "export", "-o", out)
    assert invoke_json("--db", postgres, "blocks", "import", out, "--json") == {"imported": 2, "kept": []}
    assert asyncio.run(dump_blocks(postgres)) == rows
    # the history, the undo stack and the attachments work on the other side
    assert invoke_json("--db", postgres, "blocks", "redo", "human", "--agent", "a", "--json")["value"] == (
        "Ada\nlikes tea"
    )
    again = invoke_json("--db", postgres, "blocks", "import", out, "--json")
    assert (again["imported"], sorted(again["kept"])) == (0, ["(shared)/team", "a/human"])
    assert invoke_json("--db", postgres, "blocks", "import", out, "--replace", "--json")["imported"] == 2
    back = tmp_path / "b.db"
    exported = invoke("--db", postgres, "blocks", "export").stdout
    (tmp_path / "back.json").write_text(exported)
    invoke("--db", back, "blocks", "import", tmp_path / "back.json")
    assert asyncio.run(dump_blocks(str(back))) == rows


def test_import_refuses_a_file_that_is_not_an_export(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 1}]')
    result = invoke("--db", tmp_path / "x.db", "blocks", "import", bad, ok=False)
    assert result.exit_code == 1 and result.stderr.startswith("Error: ")
    assert result.stderr.count("\n") == 1 and "is not a blocks export" in result.stderr
