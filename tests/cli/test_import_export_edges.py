"""Import and export at their edges: a file that starts with a UTF-8 byte order mark (as some
Windows editors write) imports; bytes that are not UTF-8 are refused naming the line; an output
in a folder that takes no new file says so, not that the folder is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axio_context.testing import text
from tests.support.cli_helpers import invoke, make_sessions

BOM = b"\xef\xbb\xbf"


@pytest.fixture
def exported(tmp_path: Path) -> dict[str, bytes]:
    db = tmp_path / "source.db"
    make_sessions(db, {"s1": [text("user", "hello there"), text("assistant", "hi")]})
    return {fmt: invoke("--db", db, "export", "s1", "-f", fmt).stdout_bytes for fmt in ("json", "jsonl")}


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
@pytest.mark.parametrize("given", [None, "json", "jsonl"])
def test_a_byte_order_mark_is_accepted(
    tmp_path: Path, exported: dict[str, bytes], fmt: str, given: str | None
) -> None:
    if given is not None and given != fmt:
        return
    path = tmp_path / f"bom.{fmt}"
    path.write_bytes(BOM + exported[fmt])
    db = tmp_path / "target.db"
    invoke("--db", db, "import", path, *(["-f", given] if given else []))
    doc = json.loads(invoke("--db", db, "show", "s1", "--json").stdout)
    assert [m["content"][0]["text"] for m in doc["messages"]] == ["hello there", "hi"]


def test_bytes_that_are_not_utf8_are_refused_naming_the_line(
    tmp_path: Path, exported: dict[str, bytes]
) -> None:
    lines = exported["jsonl"].split(b"\n")
    lines[1] = lines[1].replace(b"hello", b"hel\xfflo")
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines))
    result = invoke("--db", tmp_path / "t.db", "import", path, ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: line 2: ") and "UTF-8" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1

    doc = exported["json"].replace(b"hello", b"hel\xfflo")
    where = doc[: doc.index(b"hel\xfflo")].count(b"\n") + 1
    path = tmp_path / "bad.json"
    path.write_bytes(doc)
    result = invoke("--db", tmp_path / "t.db", "import", path, ok=False)
    assert result.exit_code == 1
    assert f"line {where}" in result.stderr and "UTF-8" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="a Linux /proc")
def test_an_output_whose_folder_takes_no_new_file_says_so(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    make_sessions(db, {"s1": [text("user", "hello")]})
    result = invoke("--db", db, "export", "s1", "-o", "/proc/version", ok=False)
    assert result.exit_code == 1
    assert "No such folder" not in result.stderr
    assert result.stderr.startswith("Error: ") and "/proc/version" in result.stderr, result.stderr
    assert "cannot" in result.stderr and result.stderr.count("\n") == 1
