"""Issue 34's encryption-at-rest benchmark: what a key costs the SQLite store.

Sides, alternated round by round in one process (same file system, WAL, ``synchronous=NORMAL``):

- **plain**: the store as it is (sqlean, memory-mapped reads);
- **sqlcipher**: the same store on a file encrypted by SQLCipher (``sqlcipher3``, a raw 32-byte key,
  SQLCipher 4 defaults: AES-256-CBC pages with HMAC-SHA512), FTS5 and sqlite-vec as they are;
- **aes-gcm (estimate)**: the alternative of encrypting each payload in the store with AES-GCM
  (``cryptography``): the plain side's time plus the time to seal (append) or open (load) the
  same messages' MessagePack payloads. A lower bound: that design would also have to drop the
  keyword index (or keep it in plaintext), so its search is not measured.

Measured: **append**, the median of ``--messages`` single appends to a fresh session; **load**,
``get_history`` of that session on the open connection (median of ``--repeat``: pages already
decrypted in the cache) and **cold load**, the first ``get_history`` on a new connection (every
page read and decrypted); **search**, a keyword search (median of ``--repeat``).

Run: ``python -m bench.bench_encryption`` (``--quick`` for a smoke run); ``--json FILE`` writes
the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from axio_context import Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect, open_database

KEY = bytes(range(32))
WORDS = ("the", "agent", "read", "a", "config", "file", "and", "found", "the", "port", "wrong", "again")


def _message(i: int) -> Message:
    words: list[str] = []
    n = i
    while sum(map(len, words)) + len(words) < 600:
        words.append(WORDS[n % len(WORDS)])
        n = n * 7 + 3
    role = "user" if i % 2 == 0 else "assistant"
    return Message(role=role, content=[TextBlock(text=f"turn {i}: " + " ".join(words))])  # type: ignore[arg-type]


async def time_store(store: Any, messages: list[Message], repeat: int) -> tuple[list[float], list[float]]:
    """Seconds of each single append of ``messages`` to ``store``, then of ``repeat`` loads of it
    (shared with ``bench.bench_pgencryption``)."""
    appends = []
    for m in messages:
        t = time.perf_counter()
        await store.append(m)
        appends.append(time.perf_counter() - t)
    loads = []
    for _ in range(repeat):
        t = time.perf_counter()
        history = await store.get_history()
        loads.append(time.perf_counter() - t)
    assert len(history) == len(messages)
    return appends, loads


async def _one_round(
    folder: Path, key: bytes | None, messages: list[Message], repeat: int
) -> dict[str, float]:
    path = folder / f"{'enc' if key else 'plain'}-{time.monotonic_ns()}.db"
    conn = await connect(path, key=key)
    appends, loads = await time_store(SQLiteContextStore(conn, "bench", project="/bench"), messages, repeat)
    await conn.close()
    conn = await connect(path, key=key)
    t = time.perf_counter()
    await SQLiteContextStore(conn, "bench").get_history()
    cold = time.perf_counter() - t
    await conn.close()
    searches = []
    async with open_database(path, key=key) as db:
        await db.search("config port", mode="keyword")  # the index catches up once
        for _ in range(repeat):
            t = time.perf_counter()
            await db.search("config port", mode="keyword")
            searches.append(time.perf_counter() - t)
    await asyncio.to_thread(_remove, path)
    return {
        "append_us": statistics.median(appends) * 1e6,
        "load_ms": statistics.median(loads) * 1e3,
        "cold_load_ms": cold * 1e3,
        "search_ms": statistics.median(searches) * 1e3,
    }


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _aes_gcm(messages: list[Message], repeat: int) -> dict[str, float]:
    """Seal each payload (per append) and open them all (per load), as payload encryption would."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aes = AESGCM(KEY)
    payloads = [msgspec.msgpack.encode(m) for m in messages]
    seal = []
    sealed = []
    for p in payloads:
        t = time.perf_counter()
        nonce = os.urandom(12)
        sealed.append(nonce + aes.encrypt(nonce, p, None))
        seal.append(time.perf_counter() - t)
    opens = []
    for _ in range(repeat):
        t = time.perf_counter()
        for s in sealed:
            aes.decrypt(s[:12], s[12:], None)
        opens.append(time.perf_counter() - t)
    return {"seal_us": statistics.median(seal) * 1e6, "open_all_ms": statistics.median(opens) * 1e3}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    messages = [_message(i) for i in range(args.messages)]
    sides: dict[str, list[dict[str, float]]] = {"plain": [], "sqlcipher": []}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for r in range(args.rounds):
            order = ["plain", "sqlcipher"] if r % 2 == 0 else ["sqlcipher", "plain"]
            for side in order:
                key = KEY if side == "sqlcipher" else None
                sides[side].append(await _one_round(Path(tmp), key, messages, args.repeat))
    result: dict[str, Any] = {}
    for side, rounds in sides.items():
        result[side] = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    gcm = _aes_gcm(messages, args.repeat)
    plain = result["plain"]
    result["aes-gcm (estimate)"] = {
        "append_us": plain["append_us"] + gcm["seal_us"],
        "load_ms": plain["load_ms"] + gcm["open_all_ms"],
        "cold_load_ms": plain["cold_load_ms"] + gcm["open_all_ms"],
        "search_ms": float("nan"),
    }
    result["aes_gcm_raw"] = gcm
    result["setup"] = {"messages": args.messages, "rounds": args.rounds, "repeat": args.repeat}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4, help="rounds per side, sides alternated")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dir", default=None, help="folder for the database files")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.messages, args.rounds, args.repeat = 200, 2, 3
    result = asyncio.run(main_async(args))
    plain = result["plain"]
    print(f"{'side':<20} {'append us':>10} {'load ms':>9} {'cold load ms':>13} {'search ms':>10}")
    for side in ("plain", "sqlcipher", "aes-gcm (estimate)"):
        r = result[side]
        print(
            f"{side:<20} {r['append_us']:>10.0f} {r['load_ms']:>9.2f} {r['cold_load_ms']:>13.2f}"
            f" {r['search_ms']:>10.2f}"
        )
    for side in ("sqlcipher", "aes-gcm (estimate)"):
        r = result[side]
        print(
            f"{side} / plain: append {r['append_us'] / plain['append_us']:.2f}x,"
            f" load {r['load_ms'] / plain['load_ms']:.2f}x,"
            f" cold load {r['cold_load_ms'] / plain['cold_load_ms']:.2f}x"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
