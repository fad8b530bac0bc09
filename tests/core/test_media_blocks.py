"""Image, audio and video blocks share one base (MediaBlock); the tagged union and the stored
bytes are exactly what they were before the base existed (pinned from that version)."""

from __future__ import annotations

import msgspec

from axio_context import codec
from axio_context.blocks import AudioBlock, ImageBlock, MediaBlock, VideoBlock, from_dict, to_dict

CONTENT = [
    ImageBlock(media_type="image/png", data=b"\x89PNG"),
    AudioBlock(media_type="audio/wav", data=b"RIFF"),
    VideoBlock(media_type="video/mp4", data=b""),
]
#: encode_content(CONTENT) as written before MediaBlock was introduced.
PINNED_MSGPACK = bytes.fromhex(
    "9383a474797065a5696d616765aa6d656469615f74797065a9696d6167652f706e67a464617461c40489504e4783a4"
    "74797065a5617564696faa6d656469615f74797065a9617564696f2f776176a464617461c4045249464683a47479"
    "7065a5766964656faa6d656469615f74797065a9766964656f2f6d7034a464617461c400"
)
PINNED_JSON = (
    b'[{"type":"image","media_type":"image/png","data":"iVBORw=="},{"type":"audio","media_type":"audio/wav",'
    b'"data":"UklGRg=="},{"type":"video","media_type":"video/mp4","data":""}]'
)


def test_stored_and_exported_bytes_are_unchanged() -> None:
    assert codec.encode_content(CONTENT) == PINNED_MSGPACK
    assert codec.encode_json(CONTENT) == PINNED_JSON
    assert codec.decode_content(PINNED_MSGPACK) == CONTENT
    assert codec.decode_content_json(PINNED_JSON) == CONTENT


def test_one_base_and_the_union_is_unchanged() -> None:
    assert all(isinstance(b, MediaBlock) for b in CONTENT)
    assert [f.name for f in msgspec.structs.fields(ImageBlock)] == ["media_type", "data"]
    assert [type(b).__struct_config__.tag for b in CONTENT] == ["image", "audio", "video"]
    assert [from_dict(to_dict(b)) for b in CONTENT] == CONTENT
    assert repr(CONTENT[1]) == "AudioBlock(media_type='audio/wav', data=<4 bytes>)"
    assert ImageBlock(media_type="a", data=b"") != AudioBlock(media_type="a", data=b"")
