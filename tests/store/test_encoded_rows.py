"""What an append builds per message before its transaction stays out of the garbage collector's
way: a batch of 1,000 encoded rows is not 2,000 more tracked objects surviving into the older
generations (bringing the next full collection of the application's heap sooner)."""

from __future__ import annotations

import gc

from axio_context.blocks import ImageBlock, TextBlock
from axio_context.messages import Message
from axio_context_sqlite.store.message_rows import encode_message
from axio_context_sqlite.store.packing import BLOB_MIN


def test_an_encoded_row_is_not_tracked_and_its_blobs_kept() -> None:
    plain = encode_message(Message(role="user", content=[TextBlock(text="hi")], metadata={"k": "v"}))
    assert not gc.is_tracked(plain)
    assert not gc.is_tracked(plain.blobs) and list(plain.blobs) == []
    data = b"\x89PNG" + bytes(BLOB_MIN)
    media = encode_message(Message(role="user", content=[ImageBlock(media_type="image/png", data=data)]))
    assert not gc.is_tracked(media)
    assert isinstance(media.blobs, tuple)  # an untracked row holds nothing mutable to cycle through
    assert [blob for _, blob in media.blobs] == [data]
