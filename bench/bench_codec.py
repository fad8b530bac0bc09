"""Codec micro-benchmark: msgspec (this package) vs stdlib json + dataclasses (axio's way).

Encodes and decodes a realistic 1,000-message transcript (text, tool calls, 0.5-6 KB and 4 KB
tool results, a few 8 KB images) both ways in the same run and prints the ratios.
Run: ``python -m bench.bench_codec``.
"""

from __future__ import annotations

import base64
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import singledispatch
from typing import Any

from axio_context import ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock, codec

from .workload import transcript

# --- the baseline: axio 0.12's shape, dataclasses + singledispatch to_dict + json -------------


@dataclass(frozen=True, slots=True)
class DText:
    text: str
    signature: str = ""
    provider: str = ""


@dataclass(frozen=True, slots=True)
class DImage:
    media_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class DToolUse:
    id: str
    name: str
    input: dict[str, Any]
    signature: str = ""
    provider: str = ""


@dataclass(frozen=True, slots=True)
class DToolResult:
    tool_use_id: str
    content: str | list[Any]
    is_error: bool = False


@dataclass(slots=True)
class DMessage:
    role: str
    content: list[Any] = field(default_factory=list)


@singledispatch
def d_to_dict(block: Any) -> dict[str, Any]:
    raise TypeError(type(block))


@d_to_dict.register
def _(b: DText) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": b.text}
    if b.signature:
        out["signature"] = b.signature
    if b.provider:
        out["provider"] = b.provider
    return out


@d_to_dict.register
def _(b: DImage) -> dict[str, Any]:
    return {"type": "image", "media_type": b.media_type, "data": base64.b64encode(b.data).decode()}


@d_to_dict.register
def _(b: DToolUse) -> dict[str, Any]:
    return {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}


@d_to_dict.register
def _(b: DToolResult) -> dict[str, Any]:
    content = b.content if isinstance(b.content, str) else [d_to_dict(x) for x in b.content]
    return {"type": "tool_result", "tool_use_id": b.tool_use_id, "content": content, "is_error": b.is_error}


def d_from_dict(d: dict[str, Any]) -> Any:
    match d["type"]:
        case "text":
            return DText(text=d["text"], signature=d.get("signature", ""), provider=d.get("provider", ""))
        case "image":
            return DImage(media_type=d["media_type"], data=base64.b64decode(d["data"]))
        case "tool_use":
            return DToolUse(id=d["id"], name=d["name"], input=d["input"])
        case "tool_result":
            raw = d["content"]
            content = raw if isinstance(raw, str) else [d_from_dict(x) for x in raw]
            return DToolResult(tool_use_id=d["tool_use_id"], content=content, is_error=d["is_error"])
    raise ValueError(d["type"])


def to_baseline(msgs: list[Message]) -> list[DMessage]:
    out = []
    for m in msgs:
        blocks: list[Any] = []
        for b in m.content:
            if isinstance(b, TextBlock):
                blocks.append(DText(b.text))
            elif isinstance(b, ImageBlock):
                blocks.append(DImage(b.media_type, b.data))
            elif isinstance(b, ToolUseBlock):
                blocks.append(DToolUse(b.id, b.name, b.input))
            elif isinstance(b, ToolResultBlock):
                assert isinstance(b.content, str)
                blocks.append(DToolResult(b.tool_use_id, b.content, b.is_error))
        out.append(DMessage(m.role, blocks))
    return out


def baseline_encode(msgs: list[DMessage]) -> bytes:
    return json.dumps([{"role": m.role, "content": [d_to_dict(b) for b in m.content]} for m in msgs]).encode()


def baseline_decode(data: bytes) -> list[DMessage]:
    return [
        DMessage(role=m["role"], content=[d_from_dict(b) for b in m["content"]]) for m in json.loads(data)
    ]


# --- timing -----------------------------------------------------------------------------------


def best_of(fn: Callable[[], object], repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    msgs = transcript(1000, result_sizes=(500, 6000))
    # a few results exactly 4 KB, as in the workload
    base = to_baseline(msgs)
    b_json = baseline_encode(base)
    m_json = codec.encode_messages_json(msgs)
    m_mp = codec.encode_messages_msgpack(msgs)
    assert codec.decode_messages_json(m_json) == msgs
    assert codec.decode_messages_msgpack(m_mp) == msgs

    rows = [
        (
            "stdlib json + dataclasses",
            best_of(lambda: baseline_encode(base)),
            best_of(lambda: baseline_decode(b_json)),
            len(b_json),
        ),
        (
            "msgspec JSON",
            best_of(lambda: codec.encode_messages_json(msgs)),
            best_of(lambda: codec.decode_messages_json(m_json)),
            len(m_json),
        ),
        (
            "msgspec MessagePack",
            best_of(lambda: codec.encode_messages_msgpack(msgs)),
            best_of(lambda: codec.decode_messages_msgpack(m_mp)),
            len(m_mp),
        ),
    ]
    n_images = sum(isinstance(b, ImageBlock) for m in msgs for b in m.content)
    print(f"transcript: {len(msgs)} messages, {n_images} images, {len(b_json) / 1e6:.2f} MB as JSON\n")
    print(
        f"{'codec':28} {'encode ms':>10} {'decode ms':>10} {'round trip':>11} {'bytes':>10}"
        "  speed-up vs baseline"
    )
    base_rt = rows[0][1] + rows[0][2]
    for name, enc, dec, size in rows:
        rt = enc + dec
        print(
            f"{name:28} {enc * 1e3:10.2f} {dec * 1e3:10.2f} {rt * 1e3:9.2f}ms {size:10d}  "
            f"enc x{rows[0][1] / enc:.1f}  dec x{rows[0][2] / dec:.1f}  round trip x{base_rt / rt:.1f}"
        )

    # The storage payload, one message at a time as appends write it: encode_content refuses what
    # the read path could not give back (axio_context.codec.checks) around msgspec's encoding.
    contents = [m.content for m in msgs]
    payload = best_of(lambda: [codec.encode_content(c) for c in contents])
    bare = best_of(lambda: [codec._mp_enc.encode(c) for c in contents])
    per = 1e6 / len(msgs)
    print(
        f"\nstorage payload per message: encode_content {payload * per:.2f} us, of which the append"
        f" checks {(payload - bare) * per:.2f} us (msgspec alone {bare * per:.2f} us)"
    )


if __name__ == "__main__":
    main()
