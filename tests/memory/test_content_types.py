"""A blob's content type is shown to people (``blobs``, ``blobs show``): one a terminal would
act on (a C1 control such as U+009B, a bidi override) is refused on upload, as C0 already was."""

from __future__ import annotations

from pathlib import Path

import pytest

from axio_context.memory import InMemoryBlobStore
from axio_context.memory.errors import InvalidInputError
from axio_context_sqlite import connect
from axio_context_sqlite.memory import SQLiteBlobStore


@pytest.mark.parametrize(
    "bad", ["text/\x9b31m", "text/plain\u202e", "text/\x1b[2J", "image/\u2066png", "a\x7f"]
)
async def test_a_content_type_holding_a_control_is_refused(tmp_path: Path, bad: str) -> None:
    memory = InMemoryBlobStore()
    with pytest.raises(InvalidInputError, match="control"):
        await memory.upload("k", b"x", bad)
    async with connect(tmp_path / "c.db") as conn:
        with pytest.raises(InvalidInputError, match="control"):
            await SQLiteBlobStore(conn).upload("k", b"x", bad)
        assert await SQLiteBlobStore(conn).stat("k") is None
    await memory.upload("k", b"x", "text/plain; charset=utf-8")  # what is usual stays
