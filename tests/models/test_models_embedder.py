"""The embedding model: vectors, backends, tokens, the ONNX export and cheap imports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from memstrata.errors import IndexUnavailable
from memstrata.models import backends as backends_mod
from memstrata.models import embedder as emb_mod
from memstrata.models.embedder import ModelUnavailable, ensure_onnx_export, get_embedder

SENTENCES = [
    "The cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
    "Interest rates were raised by the central bank.",
    "深色模式在晚上更舒服。",
    "",
]


def test_shape_dtype_and_normalised(embedder):
    vecs = embedder.embed(SENTENCES)
    assert vecs.shape == (len(SENTENCES), embedder.dim) == (5, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    q = embedder.embed_query(SENTENCES[0])
    assert q.shape == (384,)
    assert float(q @ vecs[0]) > 0.9999


def test_identity(embedder):
    assert embedder.name == "all-MiniLM-L6-v2"
    assert embedder.max_tokens == 256
    assert get_embedder() is embedder
    assert get_embedder("all-MiniLM-L6-v2") is embedder


def test_paraphrase_closer_than_unrelated(embedder):
    a, b, c = embedder.embed(SENTENCES[:3])
    assert float(a @ b) > float(a @ c) + 0.2
    assert float(a @ b) > float(b @ c) + 0.2


def test_empty_batch_order_and_progress(embedder):
    assert embedder.embed([]).shape == (0, 384)
    calls = []
    texts = [f"note number {i} about topic {i % 3}" + " more" * (i % 5) for i in range(10)]
    vecs = embedder.embed(texts, batch_size=4, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(4, 10), (8, 10), (10, 10)]
    for i in (0, 3, 9):  # rows come back in input order despite length sorting
        assert float(vecs[i] @ embedder.embed_query(texts[i])) > 0.9999
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_runs_are_cut_by_padded_tokens(embedder):
    """Long texts go fewer to a run (at most BATCH_TOKENS padded tokens), short ones batch_size to
    a run, and each text's vector is the one it gets alone."""
    from memstrata.models.backends import BATCH_TOKENS

    long = [f"paragraph {i} " + "about kettles and tea " * 80 for i in range(10)]  # past the window
    short = [f"short note {i}" for i in range(40)]
    calls = []
    vecs = embedder.embed(long + short, batch_size=32, progress=lambda d, t: calls.append((d, t)))
    sizes = [b - a for (a, _), (b, _) in zip([(0, 0)] + calls, calls)]
    per_long = BATCH_TOKENS // embedder.max_tokens
    assert sizes[:2] == [per_long, per_long] and max(sizes) == 32 and sum(sizes) == 50, sizes
    for i in (0, 9, 10, 49):
        assert float(vecs[i] @ embedder.embed([(long + short)[i]])[0]) > 0.9999


def test_count_and_truncate_tokens(embedder):
    assert embedder.count_tokens("") == 2  # [CLS] [SEP]
    assert embedder.count_tokens("hello world") == 4
    long = "memory " * 400
    assert embedder.count_tokens(long) == 402
    cut = embedder.truncate_to_tokens(long, embedder.max_tokens)
    assert embedder.count_tokens(cut) == embedder.max_tokens
    assert long.startswith(cut)
    assert embedder.truncate_to_tokens("short text", 50) == "short text"
    assert embedder.truncate_to_tokens("anything", 2) == ""
    assert 5 <= embedder.count_tokens("深色模式") <= 8


def test_bad_backend_is_a_clear_error():
    assert issubclass(ModelUnavailable, IndexUnavailable)
    with pytest.raises(ModelUnavailable):
        get_embedder("bundled", "tensorflow")


@pytest.fixture(scope="module")
def torch_embedder():
    """The sentence-transformers backend, loaded once for the comparisons below."""
    return get_embedder("bundled", "torch")


def test_onnx_matches_sentence_transformers(torch_embedder):
    onnx = get_embedder("bundled", "onnx")
    assert onnx.backend == "onnx" and torch_embedder.backend == "torch"
    texts = SENTENCES + ["word " * 600, "Short.", "A somewhat longer sentence about memory tiers."]
    a = onnx.embed(texts, batch_size=3)
    b = torch_embedder.embed(texts)
    assert float(np.min(np.sum(a * b, axis=1))) > 0.999
    assert onnx.count_tokens("hello world") == torch_embedder.count_tokens("hello world")


def test_export_check_refuses_and_auto_falls_back(torch_embedder, tmp_path, monkeypatch):
    # Reuse the loaded model so the export path runs without loading it again.
    monkeypatch.setenv("MEMSTRATA_CACHE", str(tmp_path))
    monkeypatch.setattr(emb_mod, "_CACHE", {})
    monkeypatch.setattr(backends_mod, "load_sentence_transformer", lambda model: torch_embedder._st)
    monkeypatch.setattr(backends_mod, "MIN_EXPORT_COSINE", 1.5)  # impossible: export refused
    with pytest.raises(ModelUnavailable, match="refused"):
        get_embedder("bundled", "onnx")
    auto = get_embedder("bundled", "auto")
    assert auto.backend == "torch"
    assert not list(tmp_path.rglob("model.onnx"))
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert leftovers == []

    monkeypatch.setattr(backends_mod, "MIN_EXPORT_COSINE", 0.999)
    monkeypatch.setattr(emb_mod, "_CACHE", {})
    path = ensure_onnx_export("bundled")
    assert path.name == "model.onnx" and path.parent.parent == tmp_path / "onnx"
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["meta.json", "model.onnx", "tokenizer.json"]  # no temp files left
    meta = json.loads((path.parent / "meta.json").read_text())
    assert meta["dim"] == 384 and meta["max_tokens"] == 256 and meta["check_min_cosine"] > 0.999
    assert ensure_onnx_export("bundled") == path  # cached: no second export
    auto = get_embedder("bundled", "auto")  # the float export (int8 only on request: it cost recall)
    assert auto.backend == "onnx"
    int8 = get_embedder("bundled", "onnx-int8")  # made once beside the export
    assert int8.backend == "onnx-int8"
    assert sorted(p.name for p in (path.parent / "int8").iterdir()) == ["meta.json", "model.onnx", "tokenizer.json"]
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []  # no scratch left


def test_int8_close_to_the_float_model_and_refused_when_not(tmp_path, monkeypatch):
    from memstrata.models import quantize

    onnx = get_embedder("bundled", "onnx")
    int8 = get_embedder("bundled", "onnx-int8")
    assert int8.backend == "onnx-int8" and int8.name == onnx.name and int8.dim == onnx.dim
    texts = SENTENCES + ["word " * 600, "A somewhat longer sentence about memory tiers and their weights."]
    cos = np.sum(onnx.embed(texts) * int8.embed(texts), axis=1)
    assert float(cos.min()) > 0.97 and float(cos.mean()) > 0.985
    # a vector depends on its text alone, not on what it was embedded with (the index needs that)
    together = int8.embed(texts, batch_size=4)
    alone = np.stack([int8.embed([t])[0] for t in texts])
    assert float(np.min(np.sum(together * alone, axis=1))) > 0.99999
    meta = json.loads((int8._dir / "meta.json").read_text())
    assert meta["quantized"].startswith("int8") and meta["check_min_cosine"] >= 0.97
    # a quantisation that strays too far is refused and leaves nothing behind
    fake = tmp_path / "export"
    fake.mkdir()
    for name in ("model.onnx", "tokenizer.json", "meta.json"):
        (fake / name).write_bytes((onnx._dir / name).read_bytes())
    workdir = tmp_path / "cwd"  # the quantiser's temporary files never land in the caller's folder
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(quantize, "_MIN_INT8_COSINE", 1.01)
    with pytest.raises(ModelUnavailable, match="refused"):
        quantize.ensure_int8("bundled", fake)
    assert sorted(p.name for p in fake.iterdir()) == ["meta.json", "model.onnx", "tokenizer.json"]
    assert list(workdir.iterdir()) == []


def _run(code: str) -> dict:
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


HEAVY = ("torch", "sentence_transformers", "transformers")


def test_onnx_query_path_never_imports_torch():
    ensure_onnx_export("bundled")  # made by the session fixture already, normally
    code = (
        "import json, sys\n"
        "from memstrata.models.embedder import get_embedder\n"
        "e = get_embedder('bundled', 'onnx')\n"
        "v = e.embed_query('where did I put the deployment notes?')\n"
        "n = e.count_tokens('hello world')\n"
        "print(json.dumps({'dim': int(v.shape[0]), 'norm': float((v * v).sum()), 'n': n,\n"
        f"  'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    res = _run(code)
    assert res == {"dim": 384, "norm": pytest.approx(1.0, abs=1e-5), "n": 4, "heavy": []}


def test_import_is_cheap():
    code = (
        "import json, sys\n"
        "import memstrata.models.embedder, memstrata.models.summarize\n"
        "heavy = ('torch', 'sentence_transformers', 'transformers', 'onnxruntime', 'tokenizers')\n"
        "print(json.dumps({'heavy': [m for m in heavy if m in sys.modules]}))\n"
    )
    assert _run(code) == {"heavy": []}


def test_a_model_that_is_not_on_this_machine_is_never_downloaded(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ModelUnavailable, match="never downloads"):
        get_embedder("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", "torch")
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_the_onnx_arena_gives_back_what_a_large_batch_took():
    # onnxruntime's CPU arena kept the peak of the largest batch for the life of the process
    # (32 texts of 256 tokens: ~550 MB more RSS; the warm service grew to 1.4 GB): every run
    # now shrinks it again, so a long-lived process stays near its size at rest
    code = (
        "from memstrata.models.embedder import get_embedder\n"
        "def rss():\n"
        "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS')) // 1024\n"
        "e = get_embedder('bundled', backend='onnx')\n"
        "e.embed(['warm up'])\n"
        "rest = rss()\n"
        "text = ' '.join(f'Option {i} was chosen in meeting {i} for reason {i}.' for i in range(60))\n"
        "e.embed([text[k:] for k in range(32)])\n"
        "print(rss() - rest)\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) < 250, "the arena kept the batch's memory"
